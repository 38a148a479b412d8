from lightning import Trainer

trainer = Trainer(accelerator="tpu", devices=3)
