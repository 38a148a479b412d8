#!/usr/bin/env bash
# Command 1: install what is missing, build, and run the service on
# 127.0.0.1:8080 with an embedded PostgreSQL in ./state.
# Extra arguments go to `tpujobs serve` (see `tpujobs serve --help`).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/setup.sh"
install_packages "${BUILD_PACKAGES[@]}"
install_web_packages
build default
cd "$TPUJOBS_ROOT"
exec "$TPUJOBS_ROOT/build/service/tpujobs" serve "$@"
