import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    print(index)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
    xmp.spawn(_mp_fn, args=(), nprocs=None)
    xmp.spawn(_mp_fn, args=(), nprocs=1)
    xmp.spawn(_mp_fn, (), 1, start_method="fork")
