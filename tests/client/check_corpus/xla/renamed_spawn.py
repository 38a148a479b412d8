from torch_xla.distributed.xla_multiprocessing import spawn as launch


def _mp_fn(index):
    print(index)


if __name__ == "__main__":
    launch(_mp_fn, args=(), nprocs=8)
