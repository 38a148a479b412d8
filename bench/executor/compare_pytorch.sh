#!/usr/bin/env bash
# Training throughput of tpujobs' executor against PyTorch, side by side on
# this machine, in one run. Prints a table: model, PyTorch samples/s, tpujobs
# samples/s, ratio, target. See bench/executor/RESULTS.md.
#
#   bench/executor/compare_pytorch.sh [--quick]
#
# Environment:
#   BUILD_DIR       build directory of executor_train_throughput
#                   (default: <repo>/build-bench, configured and built here)
#   BENCH_CXX_FLAGS extra compiler flags for that build (default: -march=native;
#                   set to "" to measure the project's default flags)
#   THREADS         threads for both sides (default: 2, as the targets assume)
#
# PyTorch comes from Debian's python3-torch with libopenblas0-pthread; they are
# installed with apt-get when missing (through sudo when not root). When that
# is impossible the PyTorch column reads "skipped" and the reason is printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
build_dir="${BUILD_DIR:-${repo}/build-bench}"
threads="${THREADS:-2}"
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
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="${BENCH_CXX_FLAGS--march=native}" >&2
  cmake --build "${build_dir}" -j2 --target executor_train_throughput >&2
fi

# --- run, one model at a time so the two sides never share the cores -----------
results="$(mktemp)"
trap 'rm -f "${results}"' EXIT
echo "machine: $(nproc) cpus, $(lscpu | sed -n 's/^Model name: *//p' | head -1)" >&2
for model in digits gemm; do
  if [[ -z "${pytorch_skip_reason}" ]]; then
    "${python}" "${here}/pytorch_mlp.py" --threads "${threads}" "${quick[@]}" "${model}" |
      sed -n 's/^\([a-z_]*\) samples_per_sec=\([0-9.]*\).* samples_per_cpu_sec=\([0-9.]*\).*/pytorch \1 \2 \3/p' \
        >>"${results}"
  fi
  "${program}" --threads "${threads}" "${quick[@]}" "${model}" |
    sed -n 's/^\([a-z_]*\) samples_per_sec=\([0-9.]*\).* samples_per_cpu_sec=\([0-9.]*\).*/tpujobs \1 \2 \3/p' \
      >>"${results}"
done
replicas="$("${program}" --threads "${threads}" "${quick[@]}" replicas |
  sed -n 's/^replicas time_ratio_8_vs_1=//p')"

# --- table --------------------------------------------------------------------
awk -v replicas="${replicas}" '
  { rate[$1 " " $2] = $3; cpu[$1 " " $2] = $4 }
  function row(model, label, target,    p, t, ratio, verdict, cpu_ratio) {
    p = rate["pytorch " model]; t = rate["tpujobs " model]
    if (p == "") { ratio = "n/a"; cpu_ratio = "n/a"; verdict = "PyTorch skipped"; p = "skipped" }
    else {
      ratio = sprintf("%.2fx", t / p); verdict = (t / p >= target) ? "met" : "MISSED"
      cpu_ratio = sprintf("%.2fx", cpu["tpujobs " model] / cpu["pytorch " model])
    }
    printf "| %-34s | %14s | %14s | %7s | >= %.1fx %-6s | %9s |\n", label, p, t, ratio, target, verdict, cpu_ratio
  }
  END {
    printf "| %-34s | %14s | %14s | %7s | %-14s | %9s |\n", "model", "PyTorch samp/s", "tpujobs samp/s", "ratio", "target", "per CPU-s"
    printf "|%s|%s|%s|%s|%s|%s|\n", "------------------------------------", "----------------", "----------------", "---------", "----------------", "-----------"
    row("digits_mlp", "digits MLP 64-128-10, batch 64", 2.0)
    row("gemm_mlp", "GEMM MLP 1024-4096-4096-10, b 256", 1.2)
    printf "\n8 replicas vs 1 at the same global batch (512): time ratio %s (target <= 1.15)\n", replicas
  }' "${results}"
