import torch_xla.distributed.xla_multiprocessing as xmp

HOST_DEVICES = 4


def _mp_fn(index):
    print(index)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(), nprocs=HOST_DEVICES)
    xmp.spawn(_mp_fn, args=(), nprocs=8)
    xmp.spawn(_mp_fn, args=(), nprocs=8.0)
    xmp.spawn(_mp_fn, (), 0)
    xmp.spawn(_mp_fn, args=(), nprocs="8")
