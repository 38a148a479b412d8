#!/usr/bin/env python3
"""PyTorch side of bench/executor/compare_pytorch.sh.

Trains the same two models as executor_train_throughput, on the same data
shapes, with the same optimizer and batch sizes, and prints steady-state
samples/s measured after a warm-up:

  digits_mlp  64 -> 128 -> 10 ReLU, Adam lr 1e-3, batch 64, on the 1437
              training rows of digits (80% of data/digits.csv), reshuffled
              every epoch, last partial batch kept (drop_last=False)
  gemm_mlp    1024 -> 4096 -> 4096 -> 10 ReLU, Adam lr 1e-3, batch 256, fp32,
              synthetic data with 1024 features and 10 classes

Both are timed late in training (after several epochs' warm-up for digits,
from the second epoch of 16 batches on for the GEMM MLP), where values that
shrink towards subnormals would slow an Intel core down.

--flush-denormals sets flush-to-zero and denormals-are-zero in the MXCSR of
the main thread before torch is imported, so every thread torch's OpenBLAS
and OpenMP start afterwards inherits them (torch.set_flush_denormal(True)
alone reaches only the calling thread and threads created after it, not
OpenBLAS's pool, which starts when the library loads). It then checks that a
multi-threaded torch operation computes subnormals as zero.

Output lines match the C++ program:
"<name> samples_per_sec=<x> steps=<n> seconds=<s> samples_per_cpu_sec=<c>".
"""
import argparse
import csv
import ctypes
import ctypes.util
import os
import sys
import time

torch = None  # imported in main(), after the floating-point mode is set
nn = None


def flush_denormals_before_threads_start():
    """FTZ and DAZ in this thread's MXCSR through glibc's fenv (x86-64 only)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    env = ctypes.create_string_buffer(32)  # x86-64 fenv_t: x87 state, then the MXCSR at byte 28
    if libm.fegetenv(env) != 0:
        sys.exit("fegetenv failed")
    mxcsr = int.from_bytes(env.raw[28:32], "little") | 0x8040  # FTZ (bit 15) | DAZ (bit 6)
    ctypes.memmove(ctypes.addressof(env) + 28, mxcsr.to_bytes(4, "little"), 4)
    if libm.fesetenv(env) != 0:
        sys.exit("fesetenv failed")


def load_digits(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    label = header.index("label")
    features = [[float(v) for i, v in enumerate(r) if i != label] for r in body]
    labels = [int(r[label]) for r in body]
    x = torch.tensor(features, dtype=torch.float32) / 16.0
    y = torch.tensor(labels, dtype=torch.long)
    generator = torch.Generator().manual_seed(42)
    order = torch.randperm(len(y), generator=generator)
    train = order[: len(y) - int(round(0.2 * len(y)))]
    return x[train].contiguous(), y[train].contiguous()


def subnormals_computed_as_zero():
    """True when a multi-threaded elementwise op and a matrix product flush subnormals."""
    tiny = torch.full((1 << 20,), 1e-39)  # subnormal in fp32
    elementwise = bool(((tiny * 1.0) == 0).all())
    a = torch.full((512, 512), 1e-20)
    product = bool((a @ a == 0).all())  # every product 1e-40 (subnormal), summed: < 1.2e-38
    return elementwise and product


def mlp(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def batches(x, y, batch_size, generator):
    """Endless per-epoch reshuffled batches, the last partial one included."""
    while True:
        order = torch.randperm(len(y), generator=generator)
        for start in range(0, len(y), batch_size):
            index = order[start : start + batch_size]
            yield x[index], y[index]


def measure(name, model, x, y, batch_size, warmup_steps, steps):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    stream = batches(x, y, batch_size, torch.Generator().manual_seed(0))

    def step():
        inputs, targets = next(stream)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return inputs.shape[0]

    for _ in range(warmup_steps):
        step()
    samples = 0
    cpu_start = time.process_time()
    start = time.perf_counter()
    for _ in range(steps):
        samples += step()
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    print(f"{name} samples_per_sec={samples / seconds:.1f} steps={steps} seconds={seconds:.4f} "
          f"samples_per_cpu_sec={samples / cpu_seconds:.1f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--digits-csv", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "digits.csv"))
    parser.add_argument("--flush-denormals", action="store_true")
    parser.add_argument("which", nargs="*", default=["digits", "gemm"])
    args = parser.parse_args()

    if args.flush_denormals:
        flush_denormals_before_threads_start()
    global torch, nn
    import torch as torch_module
    torch = torch_module
    nn = torch.nn
    if args.flush_denormals:
        torch.set_flush_denormal(True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch={torch.__version__} threads={torch.get_num_threads()} "
          f"subnormals_as_zero={'yes' if subnormals_computed_as_zero() else 'no'}", flush=True)
    scale = 1 if args.quick else 4
    for which in args.which:
        if which == "digits":
            x, y = load_digits(args.digits_csv)
            measure("digits_mlp", mlp([64, 128, 10]), x, y, 64, 100, 1000 * scale)
        elif which == "gemm":
            n = 256 * 16
            x = torch.randn(n, 1024)
            y = torch.randint(0, 10, (n,))
            # 16 batches an epoch; timed from step 24 (epoch 2) to step 56
            # (epoch 4), as executor_train_throughput does.
            measure("gemm_mlp", mlp([1024, 4096, 4096, 10]), x, y, 256, 8 if args.quick else 24,
                    8 if args.quick else 32)
        else:
            sys.exit(f"unknown benchmark {which}")


if __name__ == "__main__":
    main()
