#!/usr/bin/env bash
# The Debian package, as a user gets it: scripts/package.sh (a plain Release
# build, the way a packager builds, then cpack), `dpkg -i`, and the installed
# /usr/bin/tpujobs serving a job from a state directory as the package's
# `tpujobs` user. Needs root (dpkg); exits 77 (skipped) otherwise, and when a
# tpujobs package is installed already (a developer's, not to be purged).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ "$(id -u)" -ne 0 ]; then
  echo "package test: needs root for dpkg -i; skipped" >&2
  exit 77
fi
if dpkg-query -W -f='${Status}' tpujobs 2>/dev/null | grep -q "install ok installed"; then
  # A developer's own installation is theirs: the test installs and purges
  # the package, so it cannot run beside one. Skipped, with the reason.
  echo "package test: a tpujobs package is already installed on this machine; not touching it: skipped" >&2
  exit 77
fi

work="$(mktemp -d /tmp/tpujobs-package-XXXXXX)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    for _ in $(seq 1 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  dpkg --purge tpujobs >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "package test: $*" >&2; [ -f "$work/serve.log" ] && tail -40 "$work/serve.log" >&2; exit 1; }

# The test runs alone (RUN_SERIAL), so the build takes every core; its own
# build directory in the checkout (build-package/), so a second run is incremental.
TPUJOBS_PACKAGE_JOBS="${TPUJOBS_PACKAGE_JOBS:-$(nproc)}" TPUJOBS_PACKAGE_BUILD_DIR="$root/build-package" \
  "$root/scripts/package.sh" "$work/dist" || fail "scripts/package.sh failed"
deb="$(ls "$work"/dist/tpujobs_*.deb)"
info="$(dpkg-deb --info "$deb")"
grep -q "Depends:.*libpq5" <<<"$info" || fail "the package does not depend on libpq5: $info"
dpkg -i "$deb" || fail "dpkg -i $deb failed"

for file in /usr/bin/tpujobs /usr/lib/systemd/system/tpujobs.service /usr/lib/systemd/system/tpujobs-agent.service \
            /etc/default/tpujobs /usr/share/doc/tpujobs/README.md; do
  dpkg -S "$file" >/dev/null 2>&1 || fail "$file is not in the package: $(dpkg -L tpujobs)"
done
conffiles="$(dpkg-query -W -f='${Conffiles}' tpujobs)"
grep -q "/etc/default/tpujobs" <<<"$conffiles" || fail "/etc/default/tpujobs is not a conffile"
user="$(getent passwd tpujobs)" || fail "no tpujobs system user"
grep -q ":/usr/sbin/nologin$" <<<"$user" || fail "the tpujobs user can log in: $user"
[ "$(stat -c %U /var/lib/tpujobs)" = tpujobs ] || fail "/var/lib/tpujobs is not owned by tpujobs"
grep -q '^ExecStart=/usr/bin/tpujobs serve \$TPUJOBS_SERVE_ARGS$' /usr/lib/systemd/system/tpujobs.service ||
  fail "tpujobs.service does not run the installed binary"
grep -q '^LimitNICE=-10$' /usr/lib/systemd/system/tpujobs.service ||
  fail "tpujobs.service does not let the scheduler leader run at nice -10"
grep -q '^LimitNOFILE=[0-9]' /usr/lib/systemd/system/tpujobs.service ||
  fail "tpujobs.service sets no LimitNOFILE (1,024 descriptors are 1,000 idle connections)"
/usr/bin/tpujobs --help >/dev/null || fail "/usr/bin/tpujobs --help failed"

# The installed binary as the service user, as its unit runs it, on a state directory of its own.
state="$work/state"
mkdir -p "$state"
chown tpujobs:tpujobs "$state" "$work"
# setpriv execs the binary itself (no intermediate process), so $! is the service.
setpriv --reuid=tpujobs --regid=tpujobs --init-groups /usr/bin/tpujobs serve --listen 127.0.0.1:0 --pool v3-8 --state-dir "$state" \
  >"$work/serve.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 1200); do  # up to 120 s: initdb on a busy machine
  url="$(sed -n 's|.*listening on \(http://[0-9.]*:[0-9]*\).*|\1|p;T;q' "$work/serve.log")"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || fail "the installed tpujobs ended before listening"
  sleep 0.1
done
[ -n "$url" ] || fail "the installed tpujobs did not listen within 120 s"

spec='{"name":"from-the-package","trainer":{"accelerator":"tpu","devices":1,"max_epochs":1},
  "model":{"layers":[{"type":"linear","out":16},{"type":"relu"},{"type":"linear","out":3}],"loss":"cross_entropy"},
  "data":{"dataset":"iris","batch_size":16},"optimizer":{"type":"adam","lr":0.01}}'
curl -sS -o "$work/created.json" -D "$work/created.headers" -X POST "$url/v1/jobs" -H 'Content-Type: application/json' --data-binary "$spec" || fail "submit failed"
grep -q "^HTTP/1.1 201" "$work/created.headers" || fail "submit was not accepted: $(cat "$work/created.headers" "$work/created.json")"
id="$(sed -n 's|^[Ll]ocation: /v1/jobs/\([0-9]*\).*|\1|p' "$work/created.headers")"
[ -n "$id" ] || fail "no Location in $(cat "$work/created.headers")"
final="$(curl -sS "$url/v1/jobs/$id/wait?timeout=120")" || fail "wait failed"
grep -q '"state":"SUCCEEDED"' <<<"$final" || fail "job $id did not succeed: $final"
[ -d "$state/pgdata" ] || fail "no embedded database in $state"
[ "$(stat -c %U "$state/pgdata")" = tpujobs ] || fail "the embedded database is not the tpujobs user's"

kill -TERM "$server_pid"
for _ in $(seq 1 600); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$server_pid" 2>/dev/null && fail "the installed tpujobs did not stop within 60 s of SIGTERM"
wait "$server_pid" || fail "the installed tpujobs exited with $? on SIGTERM"
server_pid=""

dpkg --purge tpujobs >/dev/null || fail "dpkg --purge failed"
[ ! -e /usr/bin/tpujobs ] || fail "/usr/bin/tpujobs is still there after purge"
echo "package test: $(basename "$deb") installed, served job $id from $state, purged"
