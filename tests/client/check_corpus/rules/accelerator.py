import lightning as L

trainer = L.Trainer(accelerator="gpu", devices=1)
