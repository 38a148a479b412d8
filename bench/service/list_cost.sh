#!/usr/bin/env bash
# The cost of a wide list (issue 34): a standalone `tpujobs serve` (embedded
# PostgreSQL, fresh state dir, pool v3-8 drained) with 500 queued jobs (two
# sweeps of examples/digits-mlp.json), then 100 sequential
# GET /v1/jobs?limit=500 on one connection. Prints the wall p50 and minimum,
# the answer's size, and the service's CPU per list (user + system of the
# tpujobs process, from /proc).
#
#   bench/service/list_cost.sh [PATH/TO/tpujobs]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
binary=${1:-$root/build/service/tpujobs}
[[ -x $binary ]] || { echo "no tpujobs binary at $binary" >&2; exit 2; }

state=$(mktemp -d /tmp/tpujobs-listcost.XXXXXX)
chmod 755 "$state"  # the embedded PostgreSQL may run as an unprivileged user
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$binary" serve --listen "127.0.0.1:$port" --state-dir "$state/state" --pool v3-8 >"$state/serve.log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null && wait "$pid" || true
  rm -rf "$state"
}
trap cleanup EXIT
for _ in $(seq 600); do
  grep -q "tpujobs listening on" "$state/serve.log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$state/serve.log" >&2; exit 1; }
  sleep 0.1
done

python3 - "$port" "$pid" "$root/examples/digits-mlp.json" <<'PY'
import http.client, json, os, sys, time
port, pid, spec_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

def call(method, path, body=None):
    payload = json.dumps(body).encode() if body is not None else None
    connection.request(method, path, body=payload,
                       headers={"Content-Type": "application/json"} if payload else {})
    answer = connection.getresponse()
    return answer.status, answer.read()

def cpu_seconds():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

status, pool = call("GET", "/v1/pool")
for host in json.loads(pool)["hosts"]:
    call("POST", f"/v1/pool/hosts/{host['name']}:drain", {})
spec = json.load(open(spec_path))
for k in range(2):
    status, body = call("POST", "/v1/jobs", dict(spec, sweep={"trainer.seed": list(range(250 * k, 250 * k + 250))}))
    assert status == 201, body
took, size = [], 0
before = cpu_seconds()
for _ in range(100):
    began = time.perf_counter()
    status, body = call("GET", "/v1/jobs?limit=500")
    took.append(time.perf_counter() - began)
    assert status == 200, body
    size = len(body)
cpu = cpu_seconds() - before
took.sort()
print(f"{open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}, "
      f"load {os.getloadavg()[0]:.2f}")
print(f"list of 500: p50 {took[50] * 1000:.1f} ms, min {took[0] * 1000:.1f} ms, {size} bytes, "
      f"service CPU {cpu * 1000 / 100:.1f} ms per list")
PY
