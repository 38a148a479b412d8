#!/usr/bin/env bash
# Command 2: install what is missing, build, and run the whole test suite:
# unit, PostgreSQL integration (each test binary starts its own private
# cluster) and end-to-end tests; then the same suite under ASan+UBSan.
# TPUJOBS_SKIP_ASAN=1 skips the sanitizer pass (for a quick local run).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/setup.sh"
install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
install_web_packages
cd "$TPUJOBS_ROOT"

# Each phase says how long it took, so a slow run shows where its time went.
phase() {
  local started=$SECONDS
  "$@"
  echo "scripts/test.sh: '$*' took $((SECONDS - started)) s" >&2
}

phase build default
phase ctest --preset default -j 2

if [ "${TPUJOBS_SKIP_ASAN:-0}" != "1" ]; then
  phase build asan
  phase ctest --preset asan -j 2
fi
