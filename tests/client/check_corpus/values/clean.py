"""A script with nothing to report."""
import lightning as L

trainer = L.Trainer(accelerator="tpu", devices=8, precision="bf16-true", max_epochs=3)
