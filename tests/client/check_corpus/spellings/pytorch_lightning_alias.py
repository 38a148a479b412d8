import pytorch_lightning as pl

trainer = pl.Trainer(accelerator="tpu", devices=3)
