from lightning.pytorch.trainer.trainer import Trainer

trainer = Trainer(accelerator="tpu", devices=3)
