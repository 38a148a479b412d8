#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each one
# for a bounded time. Fails when any target crashes, leaks, trips a
# sanitizer or breaks one of its checks, and when a known crash in
# fuzz/regressions/<target>/ still reproduces.
#
#   fuzz/run.sh [SECONDS]        # default 30 per target
#   FUZZ_BUILD=dir FUZZ_JOBS=2 fuzz/run.sh 60
#
# The committed corpus (fuzz/corpus/<target>/) is only read; what a run
# discovers goes to $FUZZ_BUILD/corpus/<target>/, crashing inputs to
# $FUZZ_BUILD/artifacts/<target>/ (reproduce: $FUZZ_BUILD/fuzz_<target> FILE).
set -uo pipefail

seconds="${1:-30}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${FUZZ_BUILD:-$repo/build-fuzz}"
targets=(job_spec csv http_request script_check)

if ! command -v clang++ >/dev/null; then
  echo "fuzz/run.sh: clang++ not found (scripts/setup.sh --test installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi
CC=clang CXX=clang++ cmake -S "$repo/fuzz" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
cmake --build "$build" -j"${FUZZ_JOBS:-2}" || exit 1

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

# One target: its known crashes, then fuzzing; prints its report and
# records each failure as a line of $build/artifacts/<target>/failed.
fuzz_one() {
  local target="$1" binary="$build/fuzz_$1" out="$build/artifacts/$1"
  mkdir -p "$build/corpus/$target" "$out"
  rm -f "$out/failed"
  {
    local regressions=("$repo/fuzz/regressions/$target"/*)
    if [[ -e "${regressions[0]}" ]]; then
      echo "== $target: known crashes in fuzz/regressions/$target"
      if ! "$binary" "${regressions[@]}" >"$out/regressions.log" 2>&1; then
        echo "   FAILED: a known crash still reproduces (see $out/regressions.log)"
        echo "$target:regressions" >>"$out/failed"
      fi
    fi

    echo "== $target: fuzzing for ${seconds}s"
    if ! "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$out/" \
        "$build/corpus/$target" "$repo/fuzz/corpus/$target" >"$out/fuzz.log" 2>&1; then
      echo "   FAILED: see $out/fuzz.log"
      grep -m3 -E "ERROR|runtime error|SUMMARY|Test unit written" "$out/fuzz.log" | sed 's/^/   /'
      echo "$target" >>"$out/failed"
    else
      grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added" \
        "$out/fuzz.log" | sed 's/^/   /'
      echo "   corpus: $(ls "$repo/fuzz/corpus/$target" | wc -l) committed, $(ls "$build/corpus/$target" | wc -l) found in $build/corpus/$target"
    fi
  } >"$out/report.txt" 2>&1
}

# Each fuzzer is one process on one core: FUZZ_JOBS of them at a time
# (default: every core), their reports printed in the targets' order.
parallel="${FUZZ_JOBS:-$(nproc)}"
running=0
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  running=$((running + 1))
  if ((running >= parallel)); then
    wait -n
    running=$((running - 1))
  fi
done
wait

failed=()
for target in "${targets[@]}"; do
  cat "$build/artifacts/$target/report.txt"
  if [[ -f "$build/artifacts/$target/failed" ]]; then
    mapfile -t -O "${#failed[@]}" failed <"$build/artifacts/$target/failed"
  fi
done

if ((${#failed[@]})); then
  echo "fuzzing failed: ${failed[*]}"
  exit 1
fi
echo "fuzzing passed: ${targets[*]} (${seconds}s each)"
