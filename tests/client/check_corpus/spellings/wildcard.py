from lightning.pytorch import *

trainer = Trainer(accelerator="tpu", devices=3)
