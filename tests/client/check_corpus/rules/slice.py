import lightning as L

trainer = L.Trainer(accelerator="tpu", devices=8)
