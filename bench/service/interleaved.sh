#!/usr/bin/env bash
# bench/service/run.sh's two rates, submits and status reads of queued jobs,
# for two or more `tpujobs` binaries interleaved in one run on one machine:
# the comparison of commits that run.sh's run-to-run noise hides.
#
#   bench/service/interleaved.sh LABEL=PATH/TO/tpujobs LABEL=PATH/TO/tpujobs [...]
#
# The first binary is the baseline. Give one binary twice (two labels, two
# copies of the file) to see the method's own noise: an A/A pair.
#
# Why interleave: what a service costs per read on this kind of machine (a
# 2-vCPU guest) moves by some 15 % from run to run and from second to
# second, with the same bits (bench/RESULTS.md, sessions 66-68), and so do
# the rates. Short bursts taken in turn give every binary the same machine
# on average, and a hundred rounds' ratios a median that a few runs cannot:
# session 68's, 100 rounds of 2 s, had a 95 % interval of +-1 %.
#
# Each binary runs its own `tpujobs serve` (embedded PostgreSQL, fresh state
# dir, run.sh's flags) for the whole run, and its hosts are drained, so every
# job submitted waits (HostUnhealthy) and its view is served from memory.
#   1. Submits: a warm-up round, then SUBMIT_ROUNDS rounds. In each round every
#      service in turn (the order rotates from round to round) takes
#      SUBMIT_DURATION of wrk's POST /v1/jobs, on both CPUs with its
#      PostgreSQL; the services not submitting wait on CPU 1.
#   2. Each PostgreSQL is vacuumed and checkpointed, so its autovacuum does not
#      run on wrk's CPU in the middle of a read (it once took half a read's rate).
#   3. Reads: a warm-up round, then READ_ROUNDS rounds as above of
#      READ_DURATION of wrk's GET /v1/jobs/{id} over the same ids in every
#      service (1 to the smallest last id). The service read is alone on
#      CPU 0; wrk, the other services and every PostgreSQL are on CPU 1.
#   4. Each service's count of jobs in PostgreSQL is checked against wrk's 201s.
#
# Prints one line per burst and a table per phase: per binary, the median rate
# and CPU per request, and against the baseline the median of the rounds'
# ratios with its 95 % interval (bootstrap), the geometric mean, the range, and
# in how many rounds the binary was the faster.
#
# Environment: SUBMIT_ROUNDS (10), SUBMIT_DURATION (2s), READ_ROUNDS (40),
# READ_DURATION (2s), CONNECTIONS (64), WRK_THREADS (2).
# Needs two CPUs, wrk, taskset, psql, python3.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/service/lib.sh
source "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
submit_rounds=${SUBMIT_ROUNDS:-10}
submit_duration=${SUBMIT_DURATION:-2s}
read_rounds=${READ_ROUNDS:-40}
read_duration=${READ_DURATION:-2s}
connections=${CONNECTIONS:-64}
wrk_threads=${WRK_THREADS:-2}
spec=$root/examples/digits-mlp.json

(($# >= 2)) || { echo "usage: $0 LABEL=BINARY LABEL=BINARY [...]" >&2; exit 2; }
(($(nproc) >= 2)) || { echo "needs two CPUs (the service read on one, wrk on the other)" >&2; exit 2; }
for tool in wrk taskset python3 curl psql; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 2; }
done

labels=() binaries=()
for arg in "$@"; do
  [[ $arg == *=* ]] || { echo "not LABEL=BINARY: $arg" >&2; exit 2; }
  labels+=("${arg%%=*}")
  binaries+=("${arg#*=}")
  [[ -x ${arg#*=} ]] || { echo "no tpujobs binary at ${arg#*=}" >&2; exit 2; }
done
n=${#labels[@]}

work=$(mktemp -d /tmp/tpujobs-interleaved.XXXXXX)
chmod 755 "$work"  # the embedded PostgreSQL may run as an unprivileged user
pids=() ports=()
stop_services() {
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      wait "$pid" || true
    fi
  done
  for i in "${!labels[@]}"; do rm -rf "$work/$i/state"; done  # some 450 MB per 40,000 jobs
}
trap stop_services EXIT

url_of() { echo "http://127.0.0.1:${ports[$1]}"; }
service_postgres() { postgres_pids "$work/$1/state"; }  # of service $1
pin() {  # pin CPUS PID...: every thread of each process
  local cpus=$1
  shift
  for p in "$@"; do taskset -a -cp "$cpus" "$p" >/dev/null 2>&1 || true; done
}
# Everything on CPU 1, then service $1 (and, with a second argument, its
# PostgreSQL) on the CPUs given.
pin_for() {  # pin_for SERVICE CPUS [with-postgres]
  for j in "${!labels[@]}"; do pin 1 "${pids[j]}" $(service_postgres "$j"); done
  pin "$2" "${pids[$1]}"
  if [[ ${3:-} == with-postgres ]]; then pin "$2" $(service_postgres "$1"); fi
}

for i in "${!labels[@]}"; do
  mkdir -p "$work/$i"
  ports[i]=$(free_port)
  start_serve "${binaries[i]}" "${ports[i]}" "$work/$i/state" "$work/$i/serve.log"
  pids[i]=$!
done
for i in "${!labels[@]}"; do
  wait_listening "$work/$i/serve.log" "${pids[i]}" || { echo "${labels[i]} did not start" >&2; exit 1; }
  drain_hosts "$(url_of "$i")"
done

echo "interleaved: $(date -u +%FT%TZ), $(lscpu | awk -F': *' '/^Model name/ {print $2; exit}'), $(nproc) CPUs, $connections connections"
tsv=$work/bursts.tsv
printf 'phase\tround\tlabel\treq_per_s\tcpu_us_service\tcpu_us_postgres\tnon_2xx\n' | tee "$tsv"
created=()
for i in "${!labels[@]}"; do created[i]=0; done

# A burst of wrk on service $3, its line in the table. Round -1 warms the
# services and wrk's connections; it is printed, not counted.
burst() {  # burst PHASE ROUND SERVICE WRK-ARGS...
  local phase=$1 round=$2 i=$3 out before pg_before cpu pg_cpu
  shift 3
  out=$work/$i/$phase$round.txt
  before=$(cpu_ms_of "${pids[i]}")
  pg_before=$(cpu_ms_of $(service_postgres "$i"))
  "$@" -t"$wrk_threads" -c"$connections" "$(url_of "$i")" >"$out"
  cpu=$(($(cpu_ms_of "${pids[i]}") - before))
  pg_cpu=$(($(cpu_ms_of $(service_postgres "$i")) - pg_before))
  awk -v p="$phase" -v r="$round" -v l="${labels[i]}" -v cpu="$cpu" -v pg="$pg_cpu" '
    /^Requests\/sec/ {rate = $2} /requests in/ {reqs = $1} /^other_status/ {other += $2}
    /^socket_errors/ {other += $2}
    END {printf "%s\t%d\t%s\t%.0f\t%.2f\t%.2f\t%d\n", p, r, l, rate, cpu * 1000 / reqs, pg * 1000 / reqs, other}' \
    "$out" | tee -a "$tsv"
}

for ((round = -1; round < submit_rounds; ++round)); do
  for ((k = 0; k < n; ++k)); do
    i=$(((round + 1 + k) % n))
    pin_for "$i" 0-1 with-postgres
    SUBMIT_SPEC=$spec burst submit "$round" "$i" wrk -d"$submit_duration" -s "$here/submit.lua"
    created[i]=$((created[i] + $(awk '/^created_201/ {print $2}' "$work/$i/submit$round.txt")))
  done
done

last_ids=()
for i in "${!labels[@]}"; do
  pin 0-1 "${pids[i]}" $(service_postgres "$i")
  last_ids[i]=$(last_job_id "$(url_of "$i")")
  state=$(curl -sf "$(url_of "$i")/v1/jobs/${last_ids[i]}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
  [[ $state == QUEUED ]] || { echo "${labels[i]}: job ${last_ids[i]} is $state, not QUEUED" >&2; exit 1; }
  psql -h "$work/$i/state" -p 5432 -U tpujobs -d tpujobs -qc "VACUUM ANALYZE" -c "CHECKPOINT" ||
    { echo "${labels[i]}: VACUUM or CHECKPOINT failed" >&2; exit 1; }
done
last_id=$(printf '%s\n' "${last_ids[@]}" | sort -n | head -1)
echo "queued jobs per service: ${last_ids[*]}; reads over ids 1-$last_id"

for ((round = -1; round < read_rounds; ++round)); do
  for ((k = 0; k < n; ++k)); do
    i=$(((round + 1 + k) % n))
    pin_for "$i" 0
    FIRST_ID=1 LAST_ID=$last_id burst read "$round" "$i" \
      taskset -c 1 wrk -d"$read_duration" -s "$here/status.lua"
  done
done

# wrk stops with up to one request in flight per connection: those jobs are
# committed but their 201 is never read. Anything else is a lost or phantom job.
mismatch=0
for i in "${!labels[@]}"; do
  stored=$(jobs_stored "$(url_of "$i")")
  echo "${labels[i]}: wrk saw ${created[i]} 201s, PostgreSQL holds $stored jobs"
  if ((stored < created[i] || stored > created[i] + connections * (submit_rounds + 1))); then
    echo "MISMATCH: ${labels[i]}" >&2
    mismatch=1
  fi
done

python3 - "$tsv" "${labels[@]}" <<'EOF'
import csv, math, random, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if int(r["round"]) >= 0]
labels = sys.argv[2:]
base = labels[0]
for phase, what in (("submit", "submits"), ("read", "status reads of queued jobs")):
    mine = [r for r in rows if r["phase"] == phase]
    rate = {(int(r["round"]), r["label"]): float(r["req_per_s"]) for r in mine}
    cpu = {(int(r["round"]), r["label"]): float(r["cpu_us_service"]) for r in mine}
    pg = {(int(r["round"]), r["label"]): float(r["cpu_us_postgres"]) for r in mine}
    rounds = sorted({k[0] for k in rate})
    print(f"\n{what}, {len(rounds)} rounds")
    print(f"| binary | median req/s | median CPU/request tpujobs / PostgreSQL (µs) | "
          f"vs {base}: median ratio | its 95 % interval | geomean | range | faster in |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label in labels:
        med = lambda d: statistics.median(d[(r, label)] for r in rounds)
        head = f"| {label} | {med(rate):.0f} | {med(cpu):.2f} / {med(pg):.2f} |"
        if label == base:
            print(head + " (baseline) | | | | |")
            continue
        ratios = [rate[(r, label)] / rate[(r, base)] for r in rounds]
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        # The median's 95 % interval: the rounds drawn again with replacement,
        # 4,000 times (a fixed seed, so one table reads the same twice).
        rng = random.Random(1)
        medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(4000))
        low, high = medians[int(0.025 * len(medians))], medians[int(0.975 * len(medians)) - 1]
        print(head + f" {statistics.median(ratios):.3f}x | {low:.3f}-{high:.3f} | {geo:.3f}x | "
              f"{min(ratios):.3f}-{max(ratios):.3f} | {sum(x > 1 for x in ratios)} of {len(ratios)} |")
bad = [r for r in rows if int(r["non_2xx"])]
if bad:
    print(f"\n{len(bad)} bursts had answers other than 201/200 or socket errors: see the lines above")
    sys.exit(1)
EOF
echo "raw output: $work"
exit "$mismatch"
