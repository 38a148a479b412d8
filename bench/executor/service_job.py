#!/usr/bin/env python3
"""The service side of bench/executor/compare_pytorch.sh: a job submitted to
a running `tpujobs serve`, as a user would, and its own samples_per_sec.

  service_job.py --url http://127.0.0.1:PORT --pid PID [--quick] digits|gemm

Submits the model as a job (POST /v1/jobs), polls GET /v1/jobs/{id} until it
ends, and prints one line in the format of executor_train_throughput:

  "<name>_mlp samples_per_sec=<x> steps=<n> seconds=<s> samples_per_cpu_sec=<c>"

x is the job's result.metrics.samples_per_sec: the trainer's samples over
its whole run (data generation excluded, first steps, validation, logging and
checkpoints included), the figure a user reads. c divides the samples
trained by the CPU time the service process (PID) used while the job ran,
all its threads (training, HTTP, telemetry); PostgreSQL's is not counted.

  gemm    1024 -> 4096 -> 4096 -> 10 ReLU, Adam lr 1e-3, batch 256, fp32,
          3 epochs of synthetic blobs with 1024 features and 10 classes
          (16 training batches an epoch), one core: the job of issue 14
  digits  64 -> 128 -> 10 ReLU, Adam lr 1e-3, batch 64, fp32, on digits,
          one core, 1,000 epochs (100 with --quick): about 2 s on a 2-core
          EPYC, so that a second of PostgreSQL's background work after a
          GEMM job's checkpoints weighs less than in a 0.6 s job
"""
import argparse
import json
import os
import sys
import time
import urllib.request


def spec_for(model, quick):
    if model == "gemm":
        return {
            "name": "bench-gemm-mlp",
            "trainer": {"accelerator": "tpu", "devices": 1, "precision": "32-true",
                        "max_epochs": 1 if quick else 3, "log_every_n_steps": 8, "seed": 1},
            "model": {"layers": [{"type": "linear", "out": 4096}, {"type": "relu"},
                                 {"type": "linear", "out": 4096}, {"type": "relu"},
                                 {"type": "linear", "out": 10}]},
            # 80% of 5,120 samples train: 16 batches of 256 an epoch.
            "data": {"dataset": {"synthetic": "blobs", "n": 5120, "features": 1024, "classes": 10},
                     "batch_size": 256},
            "optimizer": {"type": "adam", "lr": 0.001},
            "timeout": "30m",
        }
    return {
        "name": "bench-digits-mlp",
        "trainer": {"accelerator": "tpu", "devices": 1, "precision": "32-true",
                    "max_epochs": 100 if quick else 1000, "log_every_n_steps": 50, "seed": 1},
        "model": {"layers": [{"type": "linear", "out": 128}, {"type": "relu"},
                             {"type": "linear", "out": 10}]},
        "data": {"dataset": "digits", "batch_size": 64},
        "optimizer": {"type": "adam", "lr": 0.001},
        "timeout": "30m",
    }


def request(url, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as response:
        return json.loads(response.read())


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("model", choices=["digits", "gemm"])
    args = parser.parse_args()

    cpu_before = cpu_seconds(args.pid)
    begin = time.monotonic()
    job = request(f"{args.url}/v1/jobs", "POST", spec_for(args.model, args.quick))
    while job["state"] not in ("SUCCEEDED", "FAILED", "CANCELLED"):
        time.sleep(0.2)
        job = request(f"{args.url}/v1/jobs/{job['id']}")
    cpu = cpu_seconds(args.pid) - cpu_before
    if job["state"] != "SUCCEEDED":
        sys.exit(f"job {job['id']} ended {job['state']}: {json.dumps(job.get('error'))}")
    steps = job["result"]["steps"]
    batch = job["spec"]["data"]["batch_size"]
    rate = job["result"]["metrics"]["samples_per_sec"]
    print(f"{args.model}_mlp samples_per_sec={rate:.1f} steps={steps} "
          f"seconds={steps * batch / rate:.4f} samples_per_cpu_sec={steps * batch / cpu:.1f} "
          f"wall_seconds_submit_to_end={time.monotonic() - begin:.2f} job={job['id']}")


if __name__ == "__main__":
    main()
