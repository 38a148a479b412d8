import argparse

import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    print(index)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=8)
    args = parser.parse_args()
    xmp.spawn(_mp_fn, args=(), nprocs=args.nprocs)
    options = {"nprocs": 8}
    xmp.spawn(_mp_fn, **options)
