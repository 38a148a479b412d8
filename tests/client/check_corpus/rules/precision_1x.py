import pytorch_lightning as pl

trainer = pl.Trainer(accelerator="tpu", devices=8, precision=16)
