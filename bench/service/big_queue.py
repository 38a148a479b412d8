#!/usr/bin/env python3
"""A standalone `tpujobs serve` with a very large queue (issue 29's budgets).

    bench/service/big_queue.py PATH/TO/tpujobs [--jobs 100000]

Starts its own service (embedded PostgreSQL, pool v3-32, fresh state dir) on
loopback, drains every host, then measures:
  1. status reads of queued jobs with 200 queued (wrk, 64 connections);
  2. the time to queue --jobs jobs (sweeps of 250 children, 4 submitters)
     and the service's RSS per queued job (VmRSS before and after);
  3. the scheduler leader's passes over that queue, from /metrics
     (tpujobs_scheduler_pass_seconds): their mean over a quiet 30 s, and the
     longest since the start (which includes the complete reads);
  4. status reads of queued jobs with the whole queue (same wrk run);
  5. a priority-100 job: the time from the `:recover` request of one host
     to the job's STARTING event (the events' own timestamps).
Prints one line per figure. Nothing is tuned to a machine: every wait is on a
state, with a generous deadline.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SPEC = {
    "name": "queued",
    "trainer": {"accelerator": "tpu", "devices": 1, "max_epochs": 1},
    "model": {"layers": [{"type": "linear", "out": 3}], "loss": "cross_entropy"},
    "data": {"dataset": "iris", "batch_size": 16},
    "optimizer": {"type": "sgd", "lr": 0.1},
}
HERE = os.path.dirname(os.path.abspath(__file__))


def call(url, method="GET", body=None, timeout=120):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        text = answer.read()
        kind = answer.headers.get("Content-Type", "")
        return json.loads(text) if "json" in kind else text.decode()


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def pass_stats(url):
    text = call(url + "/metrics")
    def value(name):
        match = re.search(rf"^{name} (\S+)$", text, re.M)
        return float(match.group(1)) if match else 0.0
    return (value("tpujobs_scheduler_pass_seconds_count"),
            value("tpujobs_scheduler_pass_seconds_sum"),
            value("tpujobs_scheduler_pass_max_seconds"))


def status_reads(url, first, last, seconds=10):
    env = dict(os.environ, FIRST_ID=str(first), LAST_ID=str(last))
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{seconds}s", "--latency", "-s",
                          os.path.join(HERE, "status.lua"), url],
                         env=env, capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+(\S+)", out).group(1))
    p99 = re.search(r"99%\s+(\S+)", out).group(1)
    return rate, p99


def submit_sweep(url, size, offset):
    spec = dict(SPEC, sweep={"trainer.seed": list(range(offset, offset + size))})
    answer = call(url + "/v1/jobs", "POST", spec)
    return [job["id"] for job in answer["jobs"]]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--jobs", type=int, default=100000)
    args = parser.parse_args()

    state = tempfile.mkdtemp(prefix="tpujobs-bigq.")
    os.chmod(state, 0o755)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = open(os.path.join(state, "serve.log"), "w")
    serve = subprocess.Popen([args.binary, "serve", "--listen", f"127.0.0.1:{port}",
                              "--state-dir", os.path.join(state, "state"), "--pool", "v3-32",
                              "--default-max-queued", str(args.jobs + 1000)],
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while "tpujobs listening on" not in open(log.name).read():
            if serve.poll() is not None or time.time() > deadline:
                sys.exit("service did not start:\n" + open(log.name).read())
            time.sleep(0.1)
        cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo"],
                             capture_output=True, text=True).stdout.strip()
        print(f"machine: {cpu}, {os.cpu_count()} CPUs, load average {os.getloadavg()}")
        idle = rss_mb(serve.pid)
        print(f"RSS idle: {idle:.1f} MB")
        hosts = [h["name"] for h in call(url + "/v1/pool")["hosts"]]
        for host in hosts:
            call(f"{url}/v1/pool/hosts/{host}:drain", "POST", {})

        small = submit_sweep(url, 200, 0)
        rate_small, p99_small = status_reads(url, small[0], small[-1])
        print(f"status reads, 200 queued: {rate_small:.0f} req/s, p99 {p99_small}")

        began = time.time()
        sizes = [250] * ((args.jobs - 200) // 250)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            ids = [i for part in pool.map(lambda k: submit_sweep(url, 250, 1000 + 250 * k),
                                          range(len(sizes))) for i in part]
        took = time.time() - began
        queued = 200 + len(ids)
        print(f"queued {queued} jobs in {took:.1f} s ({queued / took:.0f} jobs/s)")

        # Quiet: the leader's passes over the whole queue, woken by nothing
        # but its poll interval.
        time.sleep(5)
        before = pass_stats(url)
        time.sleep(30)
        after = pass_stats(url)
        passes = after[0] - before[0]
        mean_ms = (after[1] - before[1]) / passes * 1000 if passes else float("nan")
        print(f"leader passes over {queued} queued, quiet 30 s: {passes:.0f} passes, "
              f"mean {mean_ms:.1f} ms; longest since start {after[2] * 1000:.1f} ms")
        full = rss_mb(serve.pid)
        print(f"RSS with {queued} queued: {full:.1f} MB "
              f"({(full - idle) * 1024 * 1024 / queued:.0f} bytes per queued job)")

        rate_big, p99_big = status_reads(url, small[0], max(ids))
        print(f"status reads, {queued} queued: {rate_big:.0f} req/s, p99 {p99_big} "
              f"({rate_big / rate_small:.2f}x the 200-queued figure)")

        urgent = call(url + "/v1/jobs", "POST", dict(SPEC, name="urgent", priority=100))["id"]
        deadline = time.time() + 30
        while call(f"{url}/v1/jobs/{urgent}").get("pending_reason") is None:
            if time.time() > deadline:
                sys.exit("the urgent job was never judged")
            time.sleep(0.05)
        recovered = datetime.datetime.now(datetime.timezone.utc)
        call(f"{url}/v1/pool/hosts/{hosts[0]}:recover", "POST", {})
        deadline = time.time() + 60
        while True:
            events = call(f"{url}/v1/jobs/{urgent}/events")
            starting = [e for e in events["events"] if e.get("to") == "STARTING"]
            if starting:
                break
            if time.time() > deadline:
                sys.exit("the urgent job was not placed within 60 s")
            time.sleep(0.05)
        at = datetime.datetime.fromisoformat(starting[0]["at"].replace("Z", "+00:00"))
        print(f"priority-100 job placed {(at - recovered).total_seconds() * 1000:.0f} ms "
              f"after the recover request")
    finally:
        serve.terminate()
        serve.wait(timeout=120)
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
