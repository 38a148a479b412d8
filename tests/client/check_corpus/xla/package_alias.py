import torch_xla.distributed as xd


def _mp_fn(index):
    print(index)


if __name__ == "__main__":
    xd.xla_multiprocessing.spawn(_mp_fn, args=(), nprocs=8)
