from transformers import Trainer

trainer = Trainer(accelerator="tpu", devices=3)


class Trainer2:
    pass


L = object()
L.Trainer(devices=3)
