#!/usr/bin/env bash
# Command 1: install what is missing, build, and run the service on
# 127.0.0.1:8080 with an embedded PostgreSQL in ./state.
# Extra arguments go to `tpujobs serve` (see `tpujobs serve --help`).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/setup.sh"
install_packages "${BUILD_PACKAGES[@]}"
install_web_packages
build default tpujobs
cd "$TPUJOBS_ROOT"
# PostgreSQL runs as the unprivileged `postgres` user when we are root, and
# it must reach its data directory: a checkout under /root is not reachable.
if [ -z "${TPUJOBS_STATE_DIR:-}" ] && [ "$(id -u)" -eq 0 ] && ! su -s /bin/sh postgres -c "test -x '$TPUJOBS_ROOT'" 2>/dev/null; then
  export TPUJOBS_STATE_DIR=/var/lib/tpujobs/state
  mkdir -p "$TPUJOBS_STATE_DIR"
fi
exec "$TPUJOBS_ROOT/build/service/tpujobs" serve "$@"
