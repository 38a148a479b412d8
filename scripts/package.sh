#!/usr/bin/env bash
# The packaging command: a plain Release build (no presets, no -Werror, no
# tests or benchmarks), as a distribution builds it, then the Debian package.
#   scripts/package.sh [OUTDIR]   -> OUTDIR/tpujobs_<version>_<arch>.deb (default: ./dist)
# Install it with `dpkg -i OUTDIR/tpujobs_*.deb` (its dependencies:
# postgresql-15, adduser, and the libraries the binary links).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)"
build="${TPUJOBS_PACKAGE_BUILD_DIR:-$out/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DTPUJOBS_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "${TPUJOBS_PACKAGE_JOBS:-$(nproc)}"
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
ls "$out"/tpujobs_*.deb
