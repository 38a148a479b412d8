#!/usr/bin/env bash
# Load test of a real `tpujobs serve` (embedded PostgreSQL) on loopback.
#
#   bench/service/run.sh [PATH/TO/tpujobs]
#
# Starts its own service on a free port with a fresh state dir, then:
#   1. RSS of the idle service (VmRSS of the tpujobs process only)
#   2. submit -> RUNNING latency on the idle pool (start_latency.py)
#   3. drains every host, then POST /v1/jobs with wrk (64 connections);
#      checks that PostgreSQL holds exactly as many new jobs as wrk saw 201s
#   4. GET /v1/jobs/{id} with wrk over the queued jobs (kept in memory) and
#      over the finished jobs of step 2 (served from the in-memory LRU
#      of rendered views after their first read from PostgreSQL)
#   5. RSS after the load
# prints a table and stops the service.
#
# Environment: DURATION (wrk run, default 10s), CONNECTIONS (64),
# WRK_THREADS (2), LATENCY_JOBS (200), PERF=1 records `perf record -g` of
# the service during each wrk run into $OUT (default: the state dir, kept);
# PERF=all records every process instead (`perf record -a`, no call graphs).
# KEEP_STATE=1 keeps the service's state dir (its PostgreSQL data) after.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/service/lib.sh
source "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
binary=${1:-$root/build-perf/service/tpujobs}
duration=${DURATION:-10s}
connections=${CONNECTIONS:-64}
wrk_threads=${WRK_THREADS:-2}
latency_jobs=${LATENCY_JOBS:-200}
spec=$root/examples/digits-mlp.json

[[ -x $binary ]] || { echo "no tpujobs binary at $binary (build target tpujobs first)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }

state=$(mktemp -d /tmp/tpujobs-bench.XXXXXX)
chmod 755 "$state"  # the embedded PostgreSQL may run as an unprivileged user
out=${OUT:-$state}
port=$(free_port)
url=http://127.0.0.1:$port

start_serve "$binary" "$port" "$state/state" "$state/serve.log"
pid=$!
stop_service() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    wait "$pid" || true
  fi
  # The embedded PostgreSQL's data (some 450 MB after a run) goes with the
  # service; the logs and wrk's outputs stay. KEEP_STATE=1 keeps it too.
  [[ ${KEEP_STATE:-0} == 1 ]] || rm -rf "$state/state"
}
trap stop_service EXIT

wait_listening "$state/serve.log" "$pid" || exit 1

# The service's CPU, and the embedded PostgreSQL's (postmaster and every backend).
service_cpu_ms() { cpu_ms_of "$pid"; }
postgres_cpu_ms() { cpu_ms_of $(postgres_pids "$state/state"); }

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
views_from_database() {  # job views this service read from PostgreSQL, not its cache (/metrics)
  # No early exit: awk reads to the end, so curl never fails writing (pipefail).
  curl -sf "$url/metrics" | awk '/^tpujobs_job_views_total\{from="database"\}/ {n = $2} END {print n + 0}'
}
commits() {  # transactions committed in the tpujobs database so far (pg_stat_database)
  psql -h "$state/state" -p 5432 -U tpujobs -d tpujobs -Atc \
    "SELECT xact_commit FROM pg_stat_database WHERE datname = 'tpujobs'" 2>/dev/null || echo 0
}
wrk_field() {  # wrk_field FILE REGEX -> the second field of the first matching line
  awk -v re="$2" '$0 ~ re {print $2; exit}' "$1"
}
profile() {  # profile NAME: perf record of the service while wrk runs
  if [[ ${PERF:-0} == 1 ]]; then
    perf record -F 499 -g -p "$pid" -o "$out/perf-$1.data" -- sleep "${duration%s}" >/dev/null 2>&1 &
    perf_pid=$!
  elif [[ ${PERF:-0} == all ]]; then  # every process: how tpujobs, PostgreSQL and wrk share the CPUs
    perf record -F 499 -a -o "$out/perf-$1.data" -- sleep "${duration%s}" >/dev/null 2>&1 &
    perf_pid=$!
  fi
}
wait_profile() {
  if [[ -n ${perf_pid:-} ]]; then
    wait "$perf_pid" || true
    perf_pid=
  fi
}

sleep 2
rss_idle=$(rss_kb)
load_start=$(load)

# ---- 2. submit -> RUNNING on the idle pool
python3 "$here/start_latency.py" --port "$port" --spec "$spec" --jobs "$latency_jobs" | tee "$state/latency.txt"
load_latency=$(load)

# ---- 3. submit throughput with every host drained (jobs wait, HostUnhealthy)
drain_hosts "$url"
before=$(jobs_stored "$url")
commits_before=$(commits)
profile submit
service_cpu_before=$(service_cpu_ms); postgres_cpu_before=$(postgres_cpu_ms)
SUBMIT_SPEC=$spec wrk -t"$wrk_threads" -c"$connections" -d"$duration" --latency -s "$here/submit.lua" "$url" | tee "$state/submit.txt"
wait_profile
service_cpu_submit=$(($(service_cpu_ms) - service_cpu_before)); postgres_cpu_submit=$(($(postgres_cpu_ms) - postgres_cpu_before))
load_submit=$(load)
sleep 1  # answers already sent are committed; this is only for the count below
after=$(jobs_stored "$url")
commits_submit=$(($(commits) - commits_before))
created=$(wrk_field "$state/submit.txt" '^created_201')
stored=$((after - before))
last_id=$(last_job_id "$url")
pending_reason=$(curl -sf "$url/v1/jobs/$last_id" | python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["state"], j["pending_reason"])')

# ---- 4. status reads
profile status-queued
service_cpu_before=$(service_cpu_ms)
views_from_database_before=$(views_from_database)
FIRST_ID=$((latency_jobs + 1)) LAST_ID=$last_id wrk -t"$wrk_threads" -c"$connections" -d"$duration" --latency \
  -s "$here/status.lua" "$url" | tee "$state/status-queued.txt"
wait_profile
service_cpu_status=$(($(service_cpu_ms) - service_cpu_before))
views_from_database_status=$(($(views_from_database) - views_from_database_before))
load_status=$(load)
profile status-finished
FIRST_ID=1 LAST_ID=$latency_jobs wrk -t"$wrk_threads" -c"$connections" -d"$duration" --latency \
  -s "$here/status.lua" "$url" | tee "$state/status-finished.txt"
wait_profile

sleep 2
rss_after=$(rss_kb)
stop_service

# ---- table
row() { printf '| %-44s | %-22s | %-12s |\n' "$1" "$2" "$3"; }
echo
echo "tpujobs service benchmark, $(date -u +%FT%TZ), $(nproc) CPUs, load average at start: $load_start"
row "measure" "result" "target"
row "---" "---" "---"
row "submit, jobs/s (201 committed, $connections conn)" "$(wrk_field "$state/submit.txt" '^Requests/sec')" ">= 2000"
row "submit latency p50 / p99" "$(wrk_field "$state/submit.txt" '^ +50%') / $(wrk_field "$state/submit.txt" '^ +99%')" ""
row "submit 201s (wrk) / new jobs in PostgreSQL" "$created / $stored" "equal (+<= $connections in flight)"
row "submit non-201 / socket errors" "$(wrk_field "$state/submit.txt" '^other_status') / $(wrk_field "$state/submit.txt" '^socket_errors')" "0 / 0"
row "PostgreSQL commits during submit (all)" "$commits_submit ($(awk -v c="$created" -v n="$commits_submit" 'BEGIN {printf "%.1f", n ? c / n : 0}') jobs/commit)" ""
row "CPU per submit: tpujobs / PostgreSQL (µs)" "$(awk -v a="$service_cpu_submit" -v b="$postgres_cpu_submit" -v n="$stored" 'BEGIN {printf "%.0f / %.0f", a * 1000 / n, b * 1000 / n}')" ""
row "state of the last job submitted" "$pending_reason" ""
row "status (queued jobs, in memory), req/s" "$(wrk_field "$state/status-queued.txt" '^Requests/sec')" ">= 20000"
row "status (queued) p50 / p99" "$(wrk_field "$state/status-queued.txt" '^ +50%') / $(wrk_field "$state/status-queued.txt" '^ +99%')" "p99 < 10ms"
row "CPU per status read, tpujobs (µs)" "$(awk -v a="$service_cpu_status" -v n="$(awk '/requests in/ {print $1; exit}' "$state/status-queued.txt")" 'BEGIN {printf "%.1f", a * 1000 / n}')" ""
row "status (queued) views read from PostgreSQL" "$views_from_database_status of $stored jobs" ""
row "status (queued) non-200" "$(wrk_field "$state/status-queued.txt" '^other_status')" "0"
row "status (finished jobs, LRU of rendered views), req/s" "$(wrk_field "$state/status-finished.txt" '^Requests/sec')" ">= 20000"
row "status (finished) p50 / p99" "$(wrk_field "$state/status-finished.txt" '^ +50%') / $(wrk_field "$state/status-finished.txt" '^ +99%')" "p99 < 10ms"
row "status (finished) non-200" "$(wrk_field "$state/status-finished.txt" '^other_status')" "0"
for figure in client events starting; do
  row "submit->RUNNING $figure ms p50/p90/p99" \
    "$(awk -v f="$figure" '$1 == f {print $3 " / " $5 " / " $7}' "$state/latency.txt")" "p50 < 5"
done
row "RSS idle after start (MB)" "$(awk -v k="$rss_idle" 'BEGIN {printf "%.1f", k / 1024}')" "< 50"
row "RSS after the load (MB; every queued job in memory)" "$(awk -v k="$rss_after" 'BEGIN {printf "%.1f", k / 1024}')" "(no target)"
row "load average: latency / submit / status" "$load_latency | $load_submit | $load_status" ""
echo
echo "raw output and logs: $state"
# wrk stops with up to one request in flight per connection: those jobs are
# committed but their 201 is never read. Anything else is a lost or phantom job.
if ((stored < created || stored > created + connections)); then
  echo "MISMATCH: wrk saw $created 201s but PostgreSQL holds $stored new jobs" >&2
  exit 1
fi
