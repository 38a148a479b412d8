import argparse
import os

import lightning as L

DEVICES = 8
DEVICES = 3
STRATEGY = os.environ.get("STRATEGY", "xla")


def build(devices, **kwargs):
    L.Trainer(accelerator="tpu", devices=devices, precision="16-mixed")
    L.Trainer(**kwargs)
    L.Trainer(accelerator="tpu", devices=DEVICES)
    L.Trainer(accelerator="tpu", strategy=STRATEGY, devices=3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=8)
    args = parser.parse_args()
    L.Trainer(accelerator="tpu", devices=args.devices)
    L.Trainer(accelerator=f"{args.accelerator}", devices=3)
