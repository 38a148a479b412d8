import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    print(index)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(), nprocs=8)
