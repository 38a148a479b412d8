from pytorch_lightning import Trainer

trainer = Trainer(accelerator="tpu", devices=3)
