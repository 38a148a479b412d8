import lightning.pytorch

trainer = lightning.pytorch.Trainer(accelerator="tpu", devices=3)
