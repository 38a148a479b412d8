import lightning.pytorch as lp

trainer = lp.Trainer(accelerator="tpu", devices=3)
