from lightning.pytorch import Trainer

trainer = Trainer(accelerator="tpu", devices=3)
