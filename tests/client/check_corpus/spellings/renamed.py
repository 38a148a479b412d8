from lightning.pytorch import Trainer as T

trainer = T(accelerator="tpu", devices=3)
