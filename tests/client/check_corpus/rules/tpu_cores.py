import pytorch_lightning as pl

trainer = pl.Trainer(accelerator="tpu", tpu_cores=8)
