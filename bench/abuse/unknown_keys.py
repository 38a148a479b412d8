#!/usr/bin/env python3
"""Issue 34 item 4: what one small request may cost. Starts `tpujobs serve`
(embedded PostgreSQL in a temporary state directory), then POSTs a spec with
40,000 unknown keys in `trainer` (about 560 KB) as a 256-child sweep, and the
same spec without the sweep. Prints the server's CPU time, RSS and the
answer's size for each.

usage: unknown_keys.py /path/to/tpujobs
"""
import json, os, re, signal, subprocess, sys, tempfile, time, urllib.request, urllib.error

def proc_cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def proc_rss_mb(pid):
    status = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
    return rss / 1024, hwm / 1024

def post(port, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/jobs", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=600) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()

def spec(sweep):
    trainer = {f"k{i}": 0 for i in range(40000)}
    body = {"model": {"layers": [{"type": "linear", "out": 10}]},
            "data": {"dataset": "digits"}, "trainer": trainer}
    if sweep:
        body["sweep"] = {"trainer.seed": list(range(256))}
    return json.dumps(body, separators=(",", ":")).encode()

def main():
    binary = sys.argv[1]
    state = tempfile.mkdtemp(prefix="tpujobs-bench-")
    server = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--pool", "v3-8",
                               "--state-dir", state], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        port = int(re.search(r":(\d+) \(pool", line).group(1))
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2)
                break
            except Exception:
                time.sleep(0.1)
        for sweep in (True, False):
            body = spec(sweep)
            cpu0 = proc_cpu(server.pid)
            rss0, _ = proc_rss_mb(server.pid)
            t0 = time.monotonic()
            status, answer = post(port, body)
            wall = time.monotonic() - t0
            cpu = proc_cpu(server.pid) - cpu0
            time.sleep(1)
            rss1, hwm = proc_rss_mb(server.pid)
            print(f"{'sweep of 256' if sweep else 'no sweep    '}: body {len(body)/1024:.0f} KiB, "
                  f"status {status}, answer {len(answer)} bytes, wall {wall:.2f} s, "
                  f"server CPU {cpu:.2f} s, RSS {rss0:.0f} -> {rss1:.0f} MB (peak {hwm:.0f} MB)")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        subprocess.run(["rm", "-rf", state])

if __name__ == "__main__":
    main()
