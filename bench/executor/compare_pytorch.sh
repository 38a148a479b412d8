#!/usr/bin/env bash
# Training throughput of tpujobs' executor against PyTorch, side by side on
# this machine, in one run. See bench/executor/RESULTS.md.
#
#   bench/executor/compare_pytorch.sh [--quick]
#
# The machine may be shared: each round runs PyTorch and tpujobs one after the
# other for each model (never at the same time), alternating which goes first,
# and prints the 1-minute load average around every run. The table gives each
# side's median over the rounds and every round's ratio, in samples per
# second and per CPU-second of all the process's threads (which the load
# disturbs much less). PyTorch runs three
# ways, and tpujobs is compared with the best of them: as shipped; with
# denormals flushed in all its threads (FTZ/DAZ set before torch loads, see
# pytorch_mlp.py: on Intel cores subnormals cost a microcode assist each);
# and flushed with OMP_WAIT_POLICY=passive (its threads sleep instead of
# spinning while they wait, which helps it on a loaded machine). Both sides
# time late training steps (several epochs in). GFLOP/s are given against the
# machine's peak: cores x SIMD floats x FMA units x 2 x clock.
#
# Environment:
#   ROUNDS          rounds (default: 3)
#   BUILD_DIR       build directory of executor_train_throughput
#                   (default: <repo>/build-bench, configured and built here)
#   BENCH_CXX_FLAGS extra compiler flags for that build (default: none; the
#                   AVX2+FMA matrix kernel is chosen at run time anyway)
#   THREADS         threads for both sides (default: 2, as the targets assume)
#   FMA_UNITS       FMA pipes per core for the peak (default: 2, as on Zen 2-4
#                   and Xeon Gold/Platinum; 1 on some Xeon Silver/Bronze)
#   TPUJOBS_GEMM_KERNEL  sse2|avx2|avx512 forces tpujobs' matrix kernel
#   PYTORCH_OPENBLAS_CORETYPE  OpenBLAS's kernel for PyTorch (default: its
#                   kernel for the CPU's widest SIMD when it detects a narrower
#                   one; set and empty: as detected). See "OpenBLAS's kernel".
#   SERVICE_BIN     a `tpujobs` binary (default: <repo>/build/service/tpujobs
#                   when it exists): the models also run as jobs through a
#                   `tpujobs serve` (embedded PostgreSQL, --workers THREADS)
#                   that this script starts, and the table gives the jobs'
#                   own samples_per_sec against PyTorch (service_job.py).
#                   SERVICE_BIN=none skips them.
#
# PyTorch comes from Debian's python3-torch with libopenblas0-pthread; they are
# installed with apt-get when missing (through sudo when not root). When that
# is impossible the PyTorch columns read "skipped" and the reason is printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
build_dir="${BUILD_DIR:-${repo}/build-bench}"
threads="${THREADS:-2}"
rounds="${ROUNDS:-3}"
quick=()
if [[ "${1:-}" == "--quick" ]]; then quick=(--quick); fi
python=/usr/bin/python3  # Debian's interpreter: python3-torch installs for it

# --- PyTorch ------------------------------------------------------------------
have_pytorch() {
  "${python}" -c 'import torch' >/dev/null 2>&1 &&
    dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q 'install ok installed'
}

pytorch_skip_reason=""
if ! have_pytorch; then
  echo "Installing python3-torch and libopenblas0-pthread ..." >&2
  as_root=()
  if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      as_root=(sudo -n)
    else
      pytorch_skip_reason="python3-torch is missing and installing it needs root (no passwordless sudo)"
    fi
  fi
  if [[ -z "${pytorch_skip_reason}" ]]; then
    if ! { "${as_root[@]}" apt-get install -y python3-torch libopenblas0-pthread >&2 ||
           { "${as_root[@]}" apt-get update >&2 &&
             "${as_root[@]}" apt-get install -y python3-torch libopenblas0-pthread >&2; }; }; then
      pytorch_skip_reason="apt-get could not install python3-torch libopenblas0-pthread"
    elif ! have_pytorch; then
      pytorch_skip_reason="python3-torch installed but 'import torch' fails"
    fi
  fi
fi
if [[ -n "${pytorch_skip_reason}" ]]; then
  echo "Skipping the PyTorch side: ${pytorch_skip_reason}." >&2
fi

# --- OpenBLAS's kernel ----------------------------------------------------------
# OpenBLAS chooses its kernel by the CPU's family and model. A CPU newer than
# the library falls back to a narrow one: Debian 12's OpenBLAS 0.3.21 takes an
# Intel Xeon of model 207 (AVX-512) for a "Prescott" (SSE3). PyTorch at its
# best then needs OPENBLAS_CORETYPE, which every PyTorch side gets here when
# the detected kernel is narrower than the CPU: the library's kernel for the
# CPU's widest SIMD (SkylakeX for AVX-512, Haswell for AVX2).
# PYTORCH_OPENBLAS_CORETYPE=NAME chooses one; PYTORCH_OPENBLAS_CORETYPE= (set
# and empty) keeps what OpenBLAS detects.
openblas_core() {  # the kernel OpenBLAS runs PyTorch's products with
  env "$@" OPENBLAS_VERBOSE=2 "${python}" -c 'import torch' 2>&1 | sed -n 's/^Core: //p' | head -1
}
flags="$(grep -m1 '^flags' /proc/cpuinfo)"
openblas_note=""
if [[ -z "${pytorch_skip_reason}" ]]; then
  detected_core="$(openblas_core)"
  if [[ -n "${PYTORCH_OPENBLAS_CORETYPE+set}" ]]; then
    wanted_core="${PYTORCH_OPENBLAS_CORETYPE}"
  else
    # OpenBLAS's kernels with AVX-512, and with at least AVX2.
    avx512_cores="SkylakeX|Cooperlake|SapphireRapids"
    avx2_cores="Haswell|Zen|${avx512_cores}"
    wanted_core=""
    if [[ " ${flags} " == *" avx512f "* ]]; then
      [[ "${detected_core}" =~ ^(${avx512_cores})$ ]] || wanted_core=SkylakeX
    elif [[ " ${flags} " == *" avx2 "* ]]; then
      [[ "${detected_core}" =~ ^(${avx2_cores})$ ]] || wanted_core=Haswell
    fi
  fi
  if [[ -n "${wanted_core}" ]]; then
    export OPENBLAS_CORETYPE="${wanted_core}"
    openblas_note="OpenBLAS detected '${detected_core}' on this CPU; every PyTorch side runs with OPENBLAS_CORETYPE=${wanted_core} (it runs '$(openblas_core)')"
  else
    unset OPENBLAS_CORETYPE
    openblas_note="OpenBLAS kernel: '${detected_core}' (as detected)"
  fi
  echo "${openblas_note}" >&2
fi

# --- tpujobs ------------------------------------------------------------------
program="${build_dir}/bench/executor/executor_train_throughput"
if [[ ! -x "${program}" || -n "${REBUILD:-}" ]]; then
  echo "Building executor_train_throughput in ${build_dir} ..." >&2
  cmake -S "${repo}" -B "${build_dir}" -DTPUJOBS_COMPONENTS=executor \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="${BENCH_CXX_FLAGS:-}" >&2
  cmake --build "${build_dir}" -j2 --target executor_train_throughput >&2
fi

# --- tpujobs through the service -------------------------------------------------
service_bin="${SERVICE_BIN:-${repo}/build/service/tpujobs}"
service_state=""
service_pid=""
service_url=""
stop_service() {
  if [[ -n "${service_pid}" ]] && kill -0 "${service_pid}" 2>/dev/null; then
    kill -TERM "${service_pid}"
    wait "${service_pid}" || true
  fi
  if [[ -n "${service_state}" ]]; then rm -rf "${service_state}"; fi
}
trap stop_service EXIT
if [[ "${service_bin}" != none && -x "${service_bin}" ]]; then
  service_state="$(mktemp -d /tmp/tpujobs-compare.XXXXXX)"
  chmod 755 "${service_state}"  # the embedded PostgreSQL may run as an unprivileged user
  port="$("${python}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  service_url="http://127.0.0.1:${port}"
  "${service_bin}" serve --listen "127.0.0.1:${port}" --state-dir "${service_state}/state" \
    --pool v3-8 --workers "${threads}" >"${service_state}/serve.log" 2>&1 &
  service_pid=$!
  for _ in $(seq 600); do
    grep -q "tpujobs listening on" "${service_state}/serve.log" && break
    kill -0 "${service_pid}" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q "tpujobs listening on" "${service_state}/serve.log"; then
    cat "${service_state}/serve.log" >&2
    echo "the service did not start" >&2
    exit 1
  fi
  echo "service: ${service_bin} on ${service_url}" >&2
elif [[ "${service_bin}" != none ]]; then
  echo "Skipping the service side: no tpujobs binary at ${service_bin} (build target tpujobs, or set SERVICE_BIN)." >&2
fi

# --- run ------------------------------------------------------------------------
load() { cut -d' ' -f1 /proc/loadavg; }
results="$(mktemp)"  # "<side> <model> <round> <samples/s> <samples/CPU-s> <load before> <load after>"
kernel=""
trap 'rm -f "${results}"; stop_service' EXIT
record() {  # record <side> <round> <command...>: runs it, keeps its figure lines
  local side="$1" round="$2" before output
  shift 2
  before="$(load)"
  output="$("$@")"
  if [[ "${side}" == tpujobs ]]; then kernel="$(echo "${output}" | sed -n 's/^threads=.* gemm_kernel=//p')"; fi
  echo "${output}" | sed -n "s/^\([a-z_]*\) samples_per_sec=\([0-9.]*\).* samples_per_cpu_sec=\([0-9.]*\).*/${side} \1 ${round} \2 \3 ${before} $(load)/p" |
    tee -a "${results}" >&2
}
cpu_name="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
simd_floats=4
if [[ " ${flags} " == *" avx2 "* ]]; then simd_floats=8; fi
if [[ " ${flags} " == *" avx512f "* ]]; then simd_floats=16; fi
mhz="$(lscpu | sed -n 's/^CPU max MHz: *//p' | head -1)"
if [[ -z "${mhz}" ]]; then mhz="$(sed -n 's/^cpu MHz[[:space:]]*: *//p' /proc/cpuinfo | head -1)"; fi
fma_units="${FMA_UNITS:-2}"
peak_gflops="$(awk -v c="${threads}" -v w="${simd_floats}" -v f="${fma_units}" -v m="${mhz}" 'BEGIN { printf "%.1f", c * w * f * 2 * m / 1000 }')"
peak="${peak_gflops} GFLOP/s = ${threads} cores x ${simd_floats} floats x ${fma_units} FMA x 2 x ${mhz} MHz"
echo "machine: $(nproc) cpus, ${cpu_name}; peak ${peak}" >&2
sides=(tpujobs)
if [[ -z "${pytorch_skip_reason}" ]]; then sides=(pytorch pytorch_ftz pytorch_ftz_passive tpujobs); fi
if [[ -n "${service_pid}" ]]; then sides+=(tpujobs_service); fi
for ((round = 1; round <= rounds; round++)); do
  for model in digits gemm; do
    order=("${sides[@]}")
    if ((round % 2 == 0)); then order=($(printf '%s\n' "${sides[@]}" | tac)); fi
    for side in "${order[@]}"; do
      case "${side}" in
        pytorch) record pytorch "${round}" "${python}" "${here}/pytorch_mlp.py" --threads "${threads}" "${quick[@]}" "${model}" ;;
        pytorch_ftz) record pytorch_ftz "${round}" "${python}" "${here}/pytorch_mlp.py" --flush-denormals --threads "${threads}" "${quick[@]}" "${model}" ;;
        pytorch_ftz_passive) record pytorch_ftz_passive "${round}" env OMP_WAIT_POLICY=passive "${python}" "${here}/pytorch_mlp.py" --flush-denormals --threads "${threads}" "${quick[@]}" "${model}" ;;
        tpujobs) record tpujobs "${round}" "${program}" --threads "${threads}" "${quick[@]}" "${model}" ;;
        tpujobs_service) record tpujobs_service "${round}" "${python}" "${here}/service_job.py" --url "${service_url}" --pid "${service_pid}" "${quick[@]}" "${model}" ;;
      esac
    done
  done
done
replicas_before="$(load)"
replicas="$("${program}" --threads "${threads}" "${quick[@]}" replicas | sed -n 's/^replicas //p')"
replicas="${replicas} (load ${replicas_before} -> $(load))"

# --- table --------------------------------------------------------------------
# GFLOP per training sample: forward, weight gradients, and the input
# gradients of every layer but the first (2 FLOP a multiply-add).
awk -v replicas="${replicas}" -v rounds="${rounds}" -v service="${service_pid}" -v kernel="${kernel}" -v cpu="${cpu_name}" \
    -v peak="${peak}" -v peak_gflops="${peak_gflops}" -v openblas="${openblas_note}" '
  function median(list, n,    i, j, t, sorted) {
    for (i = 1; i <= n; i++) sorted[i] = list[i]
    for (i = 2; i <= n; i++) for (j = i; j > 1 && sorted[j - 1] > sorted[j]; j--) {
      t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t
    }
    return n % 2 ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
  }
  {
    key = $1 " " $2; n[key]++
    rate[key, n[key]] = $4; cpu_rate[key, n[key]] = $5
    by_round[$1, $2, $3] = $4; cpu_by_round[$1, $2, $3] = $5; loads[$2, $3] = loads[$2, $3] " " $1 " " $6 "->" $7
  }
  function row(model, label, target, gflop_per_sample, us,    sides, s, k, i, r, list, med, best, best_side, each, ratio, verdict, flops, cpu_list, cpu_med, cpu_best, cpu_each) {
    split("pytorch pytorch_ftz pytorch_ftz_passive " us, sides, " ")
    for (s = 1; s <= 4; s++) {
      k = sides[s] " " model
      for (i = 1; i <= n[k]; i++) list[i] = rate[k, i]
      med[sides[s]] = n[k] ? median(list, n[k]) : ""
      for (i = 1; i <= n[k]; i++) cpu_list[i] = cpu_rate[k, i]
      cpu_med[sides[s]] = n[k] ? median(cpu_list, n[k]) : ""
    }
    flops = sprintf("%.1f (%.0f%%)", med[us] * gflop_per_sample, 100 * med[us] * gflop_per_sample / peak_gflops)
    if (med["pytorch"] == "") {
      printf "| %-28s | %9s | %9s | %9s | %9.1f | %-6s | %-14s | %s | n/a |\n", label, "skipped", "skipped", "skipped", med[us], "n/a", "PyTorch skipped", flops
      return
    }
    best = 0
    for (s = 1; s <= 3; s++) if (med[sides[s]] > best) { best = med[sides[s]]; best_side = sides[s] }
    each = ""
    for (r = 1; r <= rounds; r++) {
      b = 0
      for (s = 1; s <= 3; s++) if (((sides[s], model, r) in by_round) && by_round[sides[s], model, r] > b) b = by_round[sides[s], model, r]
      if (b > 0 && ((us, model, r) in by_round))
        each = each (each == "" ? "" : ", ") sprintf("%.2f", by_round[us, model, r] / b)
    }
    ratio = med[us] / best
    # The same per CPU-second of all the process'"'"'s threads, which the load
    # disturbs much less than the wall clock.
    cpu_best = 0
    for (s = 1; s <= 3; s++) if (cpu_med[sides[s]] > cpu_best) cpu_best = cpu_med[sides[s]]
    cpu_each = ""
    for (r = 1; r <= rounds; r++) {
      b = 0
      for (s = 1; s <= 3; s++) if (((sides[s], model, r) in cpu_by_round) && cpu_by_round[sides[s], model, r] > b) b = cpu_by_round[sides[s], model, r]
      if (b > 0 && ((us, model, r) in cpu_by_round))
        cpu_each = cpu_each (cpu_each == "" ? "" : ", ") sprintf("%.2f", cpu_by_round[us, model, r] / b)
    }
    verdict = ratio >= target ? "met" : "MISSED"
    printf "| %-28s | %9.1f | %9.1f | %9.1f | %9.1f | %5.2fx | >= %.1fx %-6s | %s | %s | %.1f (%s) | %.2fx (%s); tpujobs %.1f, best PyTorch %.1f GFLOP/CPU-s |\n",
      label, med["pytorch"], med["pytorch_ftz"], med["pytorch_ftz_passive"], med[us], ratio, target, verdict, flops, each,
      best * gflop_per_sample, best_side, cpu_med[us] / cpu_best, cpu_each,
      cpu_med[us] * gflop_per_sample, cpu_best * gflop_per_sample
  }
  END {
    print "CPU: " cpu "; peak " peak
    print "Medians over " rounds " rounds (samples/s); ratio = tpujobs / the best PyTorch column."
    printf "| %-28s | %9s | %9s | %9s | %9s | %-6s | %-14s | %s | %s | %s | %s |\n", "model", "PyTorch", "PT FTZ", "PT FTZ+pass", "tpujobs", "ratio", "target", "tpujobs GFLOP/s (of peak)", "ratio per round", "best PyTorch GFLOP/s", "per CPU-s: ratio (per round)"
    print "|------------------------------|-----------|-----------|-----------|-----------|--------|----------------|-----|-----|-----|-----|"
    row("digits_mlp", "digits MLP 64-128-10, b 64", 5.0, 2 * (2 * 64 * 128 + 3 * 128 * 10) * 1e-9, "tpujobs")
    row("gemm_mlp", "MLP 1024-4096-4096-10, b 256", 1.2, 0.1177, "tpujobs")
    if (service) {
      print ""
      print "The same models as jobs through the service (tpujobs column: the job'"'"'s own samples_per_sec, whole run; per CPU-s: the service process'"'"'s CPU time):"
      row("digits_mlp", "digits job", 5.0, 2 * (2 * 64 * 128 + 3 * 128 * 10) * 1e-9, "tpujobs_service")
      row("gemm_mlp", "GEMM MLP job, 3 epochs", 1.2, 0.1177, "tpujobs_service")
    }
    print ""
    print "Load average (1 min) around each round'"'"'s runs:"
    for (r = 1; r <= rounds; r++) {
      printf "  round %d: digits_mlp%s; gemm_mlp%s\n", r, loads["digits_mlp", r], loads["gemm_mlp", r]
    }
    print ""
    print "8 replicas vs 1 at the same global batch (512), time ratio (target <= 1.15): " replicas
    print "tpujobs matrix kernel: " kernel
    if (openblas != "") print "PyTorch: " openblas
  }' "${results}"
