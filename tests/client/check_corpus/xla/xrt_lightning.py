import lightning as L
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    trainer = L.Trainer(accelerator="tpu", devices=1)
    print(index, trainer)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(), nprocs=1)
