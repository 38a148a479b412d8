#!/usr/bin/env bash
# Training throughput of tpujobs' executor against PyTorch, side by side on
# this machine, in one run. See bench/executor/RESULTS.md.
#
#   bench/executor/compare_pytorch.sh [--quick]
#
# The machine may be shared: each round runs PyTorch and tpujobs one after the
# other for each model (never at the same time), alternating which goes first,
# and prints the 1-minute load average around every run. The table gives each
# side's median over the rounds and every round's ratio. PyTorch also runs
# with OMP_WAIT_POLICY=passive (its threads sleep instead of spinning while
# they wait, which helps it on a loaded machine) as a second reference.
#
# Environment:
#   ROUNDS          rounds (default: 3)
#   BUILD_DIR       build directory of executor_train_throughput
#                   (default: <repo>/build-bench, configured and built here)
#   BENCH_CXX_FLAGS extra compiler flags for that build (default: none; the
#                   AVX2+FMA matrix kernel is chosen at run time anyway)
#   THREADS         threads for both sides (default: 2, as the targets assume)
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

# --- tpujobs ------------------------------------------------------------------
program="${build_dir}/bench/executor/executor_train_throughput"
if [[ ! -x "${program}" || -n "${REBUILD:-}" ]]; then
  echo "Building executor_train_throughput in ${build_dir} ..." >&2
  cmake -S "${repo}" -B "${build_dir}" -DTPUJOBS_COMPONENTS=executor \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="${BENCH_CXX_FLAGS:-}" >&2
  cmake --build "${build_dir}" -j2 --target executor_train_throughput >&2
fi

# --- run ------------------------------------------------------------------------
load() { cut -d' ' -f1 /proc/loadavg; }
results="$(mktemp)"  # "<side> <model> <round> <samples/s> <samples/CPU-s> <load before> <load after>"
kernel=""
trap 'rm -f "${results}"' EXIT
record() {  # record <side> <round> <command...>: runs it, keeps its figure lines
  local side="$1" round="$2" before output
  shift 2
  before="$(load)"
  output="$("$@")"
  if [[ "${side}" == tpujobs ]]; then kernel="$(echo "${output}" | sed -n 's/^threads=.* gemm_kernel=//p')"; fi
  echo "${output}" | sed -n "s/^\([a-z_]*\) samples_per_sec=\([0-9.]*\).* samples_per_cpu_sec=\([0-9.]*\).*/${side} \1 ${round} \2 \3 ${before} $(load)/p" |
    tee -a "${results}" >&2
}
echo "machine: $(nproc) cpus, $(lscpu | sed -n 's/^Model name: *//p' | head -1)" >&2
sides=(tpujobs)
if [[ -z "${pytorch_skip_reason}" ]]; then sides=(pytorch pytorch_passive tpujobs); fi
for ((round = 1; round <= rounds; round++)); do
  for model in digits gemm; do
    order=("${sides[@]}")
    if ((round % 2 == 0)); then order=($(printf '%s\n' "${sides[@]}" | tac)); fi
    for side in "${order[@]}"; do
      case "${side}" in
        pytorch) record pytorch "${round}" "${python}" "${here}/pytorch_mlp.py" --threads "${threads}" "${quick[@]}" "${model}" ;;
        pytorch_passive) record pytorch_passive "${round}" env OMP_WAIT_POLICY=passive "${python}" "${here}/pytorch_mlp.py" --threads "${threads}" "${quick[@]}" "${model}" ;;
        tpujobs) record tpujobs "${round}" "${program}" --threads "${threads}" "${quick[@]}" "${model}" ;;
      esac
    done
  done
done
replicas_before="$(load)"
replicas="$("${program}" --threads "${threads}" "${quick[@]}" replicas | sed -n 's/^replicas //p')"
replicas="${replicas} (load ${replicas_before} -> $(load))"

# --- table --------------------------------------------------------------------
awk -v replicas="${replicas}" -v rounds="${rounds}" -v kernel="${kernel}" '
  function median(list, n,    i, j, t, sorted) {
    for (i = 1; i <= n; i++) sorted[i] = list[i]
    for (i = 2; i <= n; i++) for (j = i; j > 1 && sorted[j - 1] > sorted[j]; j--) {
      t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t
    }
    return n % 2 ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
  }
  {
    key = $1 " " $2; n[key]++
    rate[key, n[key]] = $4; cpu[key, n[key]] = $5
    by_round[$1, $2, $3] = $4; loads[$2, $3] = loads[$2, $3] " " $1 " " $6 "->" $7
  }
  function row(model, label, target,    sides, s, k, i, r, list, med, cpu_list, cpu_med, each, ratio, verdict) {
    split("pytorch pytorch_passive tpujobs", sides, " ")
    for (s = 1; s <= 3; s++) {
      k = sides[s] " " model
      for (i = 1; i <= n[k]; i++) { list[i] = rate[k, i]; cpu_list[i] = cpu[k, i] }
      med[sides[s]] = n[k] ? median(list, n[k]) : ""
      cpu_med[sides[s]] = n[k] ? median(cpu_list, n[k]) : ""
    }
    if (med["pytorch"] == "") {
      printf "| %-28s | %9s | %9s | %9.1f | %-7s | %-15s | n/a | n/a | n/a |\n", label, "skipped", "skipped", med["tpujobs"], "n/a", "PyTorch skipped"
      return
    }
    each = ""
    for (r = 1; r <= rounds; r++) {
      if ((("pytorch", model, r) in by_round) && (("tpujobs", model, r) in by_round))
        each = each (each == "" ? "" : ", ") sprintf("%.2f", by_round["tpujobs", model, r] / by_round["pytorch", model, r])
    }
    ratio = med["tpujobs"] / med["pytorch"]
    verdict = ratio >= target ? "met" : "MISSED"
    printf "| %-28s | %9.1f | %9.1f | %9.1f | %5.2fx | >= %.1fx %-6s | %s | %.2fx | %.2fx / %.2fx |\n",
      label, med["pytorch"], med["pytorch_passive"], med["tpujobs"], ratio, target, verdict, each,
      med["tpujobs"] / med["pytorch_passive"],
      cpu_med["tpujobs"] / cpu_med["pytorch"], cpu_med["tpujobs"] / cpu_med["pytorch_passive"]
  }
  END {
    print "Medians over " rounds " rounds (samples/s); ratio = tpujobs / PyTorch (default threads)."
    printf "| %-28s | %9s | %9s | %9s | %-7s | %-15s | %s | %s | %s |\n", "model", "PyTorch", "PT passive", "tpujobs", "ratio", "target", "ratio per round", "ratio vs passive", "per CPU-s vs PyTorch / passive"
    print "|------------------------------|-----------|-----------|-----------|---------|-----------------|-----|-----|-----|"
    row("digits_mlp", "digits MLP 64-128-10, b 64", 2.0)
    row("gemm_mlp", "MLP 1024-4096-4096-10, b 256", 1.2)
    print ""
    print "Load average (1 min) around each round'"'"'s runs:"
    for (r = 1; r <= rounds; r++) {
      printf "  round %d: digits_mlp%s; gemm_mlp%s\n", r, loads["digits_mlp", r], loads["gemm_mlp", r]
    }
    print ""
    print "8 replicas vs 1 at the same global batch (512), time ratio (target <= 1.15): " replicas
    print "tpujobs matrix kernel: " kernel
  }' "${results}"
