# shellcheck shell=bash
# What bench/service/run.sh and interleaved.sh both do to a `tpujobs serve`
# they started: sourced, not run.

free_port() {  # a loopback port nobody listens on now
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_serve BINARY PORT STATE_DIR LOG: `tpujobs serve` in the background
# ($! is its pid) on a v3-32 pool, with no bound on queued jobs: the default
# tenant's 10,000 (issue 34) would end a submit run in 429s after a few
# seconds and measure the limit instead.
start_serve() {
  "$1" serve --listen "127.0.0.1:$2" --state-dir "$3" --pool v3-32 --default-max-queued 0 \
    >"$4" 2>&1 &
}

wait_listening() {  # wait_listening SERVE_LOG PID: until it listens (60 s), or fail with its log
  for _ in $(seq 600); do
    grep -q "tpujobs listening on" "$1" && return 0
    kill -0 "$2" 2>/dev/null || { cat "$1" >&2; return 1; }
    sleep 0.1
  done
  echo "service did not start: $1" >&2
  return 1
}

drain_hosts() {  # drain_hosts URL: every host of the pool, so jobs wait (HostUnhealthy)
  local host
  for host in $(curl -sf "$1/v1/pool" | python3 -c 'import json, sys; print(" ".join(h["name"] for h in json.load(sys.stdin)["hosts"]))'); do
    curl -sf -X POST "$1/v1/pool/hosts/$host:drain" >/dev/null
  done
}

jobs_stored() {  # jobs_stored URL: all jobs in its PostgreSQL (/metrics tpujobs_jobs, a COUNT there)
  curl -sf "$1/metrics" | awk '/^tpujobs_jobs\{/ {n += $2} END {print n + 0}'
}

last_job_id() {  # last_job_id URL: the id of the newest job
  curl -sf "$1/v1/jobs?limit=1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["id"])'
}

# CPU time in ms (user + system, every thread) of the processes given: CPU
# per request is meaningful even on a loaded machine, where rates are not.
clk_tck=$(getconf CLK_TCK)
cpu_ms_of() {  # cpu_ms_of PID...
  for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null; done |
    awk -v hz="$clk_tck" '{sub(/^.*\) /, ""); t += $12 + $13} END {printf "%d", t * 1000 / hz}'
}

postgres_pids() {  # postgres_pids STATE_DIR: the embedded postmaster and its children
  local postmaster
  postmaster=$(head -1 "$1/pgdata/postmaster.pid")
  echo "$postmaster"
  awk -v pp="$postmaster" '{line = $0; sub(/^.*\) /, "", line); split(line, f, " "); if (f[2] == pp) print $1}' /proc/[0-9]*/stat 2>/dev/null
}
