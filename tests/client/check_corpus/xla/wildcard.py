from torch_xla.distributed.xla_multiprocessing import *


def _mp_fn(index):
    print(index)


if __name__ == "__main__":
    spawn(_mp_fn, args=(), nprocs=8)
