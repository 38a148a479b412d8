"""The contract router's cost per exchange, against the same requests sent
to the service directly (bench/RESULTS.md, issue 33).

    TPUJOBS_BINARY=build/service/tpujobs TPUJOBS_SOURCE_DIR=. \\
      /usr/bin/python3 tests/python/router_overhead.py [--requests 300]

Starts `tpujobs serve` (harness.Service) and contract_proxy.py, trains one
small job to its end, then times, one after another on new connections as
tests/e2e/http_client.cc makes them: GET /v1/pool, GET /v1/jobs/{id}, GET
/v1/jobs/{id}/logs?limit=10000 and /metrics (the largest answers the e2e
suites read) and POST /v1/jobs:validate. Prints the median and p95 of each,
direct and through the router (interleaved, so both see the same load), and
whether the router found any violation (it must not).
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "client", "python"))
from harness import Service, job_spec  # noqa: E402


def exchange(port, method, path, body, upstream):
    headers = {"Content-Type": "application/json"} if body else {}
    if upstream:
        headers["X-Tpujobs-Upstream"] = str(upstream)
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request(method, path, body=body, headers=headers)
    answer = connection.getresponse()
    data = answer.read()
    connection.close()
    elapsed = (time.perf_counter() - started) * 1000
    if answer.status >= 300:
        raise RuntimeError("%s %s -> %d %s" % (method, path, answer.status, data[:300]))
    return elapsed, len(data)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    import tpujobs
    service = Service().start()
    directory = tempfile.mkdtemp(prefix="tpujobs-router-bench-")
    router = None
    try:
        # 40 epochs of iris, a log line and a metric point each step: about
        # 400 lines, the size of answer the e2e suites' log checks read.
        job = tpujobs.Client(service.url).submit(
            job_spec(name="router-bench", **{"trainer.max_epochs": 40}))
        job.wait(timeout=600)
        spec = json.dumps(job_spec(name="router-bench")).encode()
        address = os.path.join(directory, "address")
        report = os.path.join(directory, "violations.txt")
        router = subprocess.Popen([sys.executable, os.path.join(HERE, "contract_proxy.py"),
                                   "--port", "0", "--report", report, "--address-file", address],
                                  stdout=subprocess.DEVNULL)
        while not os.path.exists(address):
            time.sleep(0.05)
        with open(address, encoding="utf-8") as f:
            router_port = int(f.read().strip().rsplit(":", 1)[1])
        cases = [("GET", "/v1/pool", None), ("GET", "/v1/jobs/{id}", None),
                 ("GET", "/v1/jobs/{id}/logs?limit=10000", None),
                 ("GET", "/v1/jobs/{id}/metrics", None),
                 ("POST", "/v1/jobs:validate", spec)]
        print("%-40s %8s %8s %8s %8s %6s" % ("request", "direct", "p95", "router", "p95",
                                            "ratio"))
        for method, template, body in cases:
            path = template.replace("{id}", str(job.id))
            direct, routed = [], []
            for _ in range(args.requests):  # interleaved: both see the same load
                elapsed, size = exchange(service.port, method, path, body, 0)
                direct.append(elapsed)
                routed.append(exchange(router_port, method, path, body, service.port)[0])
            d, r = statistics.median(direct), statistics.median(routed)
            p95 = lambda xs: sorted(xs)[int(len(xs) * 0.95)]  # noqa: E731
            print("%-40s %6.2fms %6.2fms %6.2fms %6.2fms %5.1fx  (%d bytes)" % (
                "%s %s" % (method, template), d, p95(direct), r,
                p95(routed), r / d, size))
        router.terminate()
        router.wait(60)
        violations = open(report).read() if os.path.exists(report) else ""
        print("violations: %s" % (violations.strip() or "none"))
        return 1 if violations else 0
    finally:
        if router is not None and router.poll() is None:
            router.kill()
        service.close()


if __name__ == "__main__":
    sys.exit(main())
