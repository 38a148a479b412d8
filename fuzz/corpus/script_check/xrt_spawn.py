#j the second byte selects --runtime xrt and v3-8 (script_check_fuzzer.cc)
torch_xla==1.13
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    pass


xmp.spawn(_mp_fn, args=(), nprocs=4)
