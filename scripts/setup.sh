#!/usr/bin/env bash
# Installs what tpujobs needs from Debian (only what is missing: a fast no-op
# when everything is there) and builds it. Sourced by serve.sh and test.sh;
# can also be run alone: scripts/setup.sh [--test] [--preset NAME].
set -euo pipefail

TPUJOBS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

BUILD_PACKAGES=(g++ make cmake pkg-config ccache mold libboost1.81-dev nlohmann-json3-dev libeigen3-dev
  libpq-dev libssl-dev libcli11-dev postgresql libgtest-dev libgmock-dev libbenchmark-dev libgloo-dev
  libtree-sitter-dev libjemalloc-dev)
# The browser tests drive Debian's Chromium with playwright-core from npm.
# The fuzz test (fuzz/run.sh) builds with clang -fsanitize=fuzzer,address,
# undefined: Debian 12's clang is clang-14, whose runtimes (libFuzzer, ASan,
# UBSan) are in libclang-rt-14-dev, only recommended by clang. The interface
# test runs Prometheus's promtool; the package test runs cpack (dpkg-dev,
# file) and installs the package with dpkg -i, which needs its dependency
# adduser already there. The notification signature test checks the HMAC
# against the openssl command line. The partition test cuts an agent off in
# a network namespace of its own, with iproute2's ip.
TEST_PACKAGES=(curl chromium clang clang-format libclang-rt-14-dev prometheus dpkg-dev file adduser
  openssl iproute2
  python3 python3-pip python3-setuptools)  # the Python client, pip-installed offline by its tests

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_packages() {
  local missing=()
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

# Installs the web UI's npm packages (exact versions from the lock file).
# Node.js may come from elsewhere (NodeSource bundles npm): install Debian's
# only when there is no npm at all.
install_web_packages() {
  if [ -f "$TPUJOBS_ROOT/web/package-lock.json" ]; then
    command -v npm >/dev/null 2>&1 || install_packages nodejs npm
    local web="$TPUJOBS_ROOT/web"
    if [ ! -f "$web/node_modules/.package-lock.json" ] || [ "$web/package-lock.json" -nt "$web/node_modules/.package-lock.json" ]; then
      (cd "$web" && npm ci --no-audit --no-fund --loglevel=error >&2)
    fi
  fi
}

# build PRESET [TARGET...]: configure and build the preset, all targets or
# only the ones named (the service's command builds only `tpujobs`).
build() {
  # ccache's paths relative to this checkout, so a clone elsewhere (a CI
  # clone, a second worktree) hits what another one compiled. Without
  # NOHASHDIR ccache hashes the build directory of every -g compilation
  # (all of ours), and no other checkout ever hits.
  export CCACHE_BASEDIR="$TPUJOBS_ROOT" CCACHE_NOHASHDIR=1
  local preset="$1"
  shift
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  cmake --preset "$preset" -S "$TPUJOBS_ROOT" >/dev/null
  cmake --build --preset "$preset" -j "$(nproc)" "${targets[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  with_tests=0
  preset=default
  while [ $# -gt 0 ]; do
    case "$1" in
      --test) with_tests=1 ;;
      --preset) preset="$2"; shift ;;
      *) echo "usage: scripts/setup.sh [--test] [--preset default|asan]" >&2; exit 2 ;;
    esac
    shift
  done
  install_packages "${BUILD_PACKAGES[@]}"
  install_web_packages
  [ "$with_tests" -eq 1 ] && install_packages "${TEST_PACKAGES[@]}"
  build "$preset"
fi
