import torch_xla.distributed.xla_multiprocessing


def _mp_fn(index):
    print(index)


if __name__ == "__main__":
    torch_xla.distributed.xla_multiprocessing.spawn(_mp_fn, args=(), nprocs=8)
