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

Output lines match the C++ program:
"<name> samples_per_sec=<x> steps=<n> seconds=<s> samples_per_cpu_sec=<c>".
"""
import argparse
import csv
import os
import sys
import time

import torch
from torch import nn


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
    parser.add_argument("which", nargs="*", default=["digits", "gemm"])
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch={torch.__version__} threads={torch.get_num_threads()}", flush=True)
    scale = 1 if args.quick else 4
    for which in args.which:
        if which == "digits":
            x, y = load_digits(args.digits_csv)
            measure("digits_mlp", mlp([64, 128, 10]), x, y, 64, 100, 1000 * scale)
        elif which == "gemm":
            n = 256 * 16
            x = torch.randn(n, 1024)
            y = torch.randint(0, 10, (n,))
            measure("gemm_mlp", mlp([1024, 4096, 4096, 10]), x, y, 256, 2,
                    8 if args.quick else 38)
        else:
            sys.exit(f"unknown benchmark {which}")


if __name__ == "__main__":
    main()
