def _mp_fn(index):
    print(index)


def main():
    import torch_xla.distributed.xla_multiprocessing as xmp
    xmp.spawn(_mp_fn, args=(), nprocs=8)
