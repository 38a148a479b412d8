import pytorch_lightning as pl

trainer = pl.Trainer(accelerator="tpu", gpus=4)
