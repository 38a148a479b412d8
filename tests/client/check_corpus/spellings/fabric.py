from lightning.fabric import Fabric

fabric = Fabric(accelerator="tpu", devices=3)
