import lightning as L

fabric = L.Fabric(accelerator="tpu", devices=3)
