"""The CTest fixture that puts the e2e tests behind the contract check.

    python3 contract_fixture.py start DIR [--document DOC]
    python3 contract_fixture.py stop DIR

`start` launches contract_proxy.py in the background, detached from the
test's output (CTest waits for every process holding its pipes), on a free
port, and returns once it listens. It leaves in DIR:
  address         HOST:PORT, read by tests/e2e/http_client.cc through
                  TPUJOBS_E2E_CONTRACT_PROXY_FILE
  pid             the router's process id
  violations.txt  one line per request or answer that broke api/openapi.json
  proxy.log       the router's output, its counts last
  trace.txt       one line per exchange: when, its time through the router

`stop` sends SIGTERM to that pid (after checking it is still this router,
never a process found by name), waits for it to exit, prints its counts and
every violation, and exits 1 if there was any, or if the router had died
before it was stopped (answers were then not checked).
"""

import argparse
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROUTER = os.path.join(HERE, "contract_proxy.py")


def paths(directory: str) -> dict:
    return {name: os.path.join(directory, name)
            for name in ("address", "pid", "violations.txt", "proxy.log", "trace.txt")}


def is_our_router(pid: int, directory: str) -> bool:
    """The process `pid` is alive, is contract_proxy.py and writes to `directory`."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            arguments = f.read().decode("utf-8", "replace").split("\0")
    except OSError:
        return False
    return ROUTER in arguments and paths(directory)["address"] in arguments


def read_pid(directory: str):
    try:
        with open(paths(directory)["pid"], encoding="utf-8") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def terminate(pid: int, directory: str, timeout: float = 60) -> bool:
    """SIGTERM to our router `pid`; True once it has exited."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_our_router(pid, directory):
            return True
        time.sleep(0.1)
    return False


def start(directory: str, document: str) -> int:
    os.makedirs(directory, exist_ok=True)
    files = paths(directory)
    # A router left by an interrupted run (its own pid file) is stopped first.
    stale = read_pid(directory)
    if stale and is_our_router(stale, directory):
        terminate(stale, directory)
    for path in files.values():
        if os.path.exists(path):
            os.remove(path)
    command = [sys.executable, ROUTER, "--port", "0", "--report", files["violations.txt"],
               "--address-file", files["address"], "--trace", files["trace.txt"]]
    if document:
        command += ["--document", os.path.abspath(document)]
    with open(files["proxy.log"], "w", encoding="utf-8") as log:
        router = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    with open(files["pid"], "w", encoding="utf-8") as f:
        f.write("%d\n" % router.pid)
    # The router listens once Prism's validator has loaded the document
    # (13 s on a loaded 2-core machine; the fixture's own timeout is 300 s).
    deadline = time.monotonic() + 240
    while not os.path.exists(files["address"]):
        if router.poll() is not None or time.monotonic() > deadline:
            print("the contract router did not start:")
            print(open(files["proxy.log"], encoding="utf-8", errors="replace").read())
            if router.poll() is None:
                router.terminate()
            return 1
        time.sleep(0.05)
    with open(files["address"], encoding="utf-8") as f:
        print("contract router %s, pid %d, checking against %s" %
              (f.read().strip(), router.pid, document or "api/openapi.json"))
    return 0


def stop(directory: str) -> int:
    files = paths(directory)
    pid = read_pid(directory)
    if pid is None:
        print("no pid file in %s: the contract router was not started" % directory)
        return 1
    failed = False
    if not is_our_router(pid, directory):
        print("the contract router (pid %d) had already exited: answers after that went "
              "unchecked" % pid)
        failed = True
    elif not terminate(pid, directory):
        print("the contract router (pid %d) did not exit within 60 s of SIGTERM" % pid)
        failed = True
    with open(files["proxy.log"], encoding="utf-8", errors="replace") as f:
        print(f.read().rstrip())
    violations = []
    if os.path.exists(files["violations.txt"]):
        with open(files["violations.txt"], encoding="utf-8", errors="replace") as f:
            violations = [line for line in f.read().splitlines() if line.strip()]
    if violations:
        print("%d exchanges broke api/openapi.json:" % len(violations))
        for line in violations:
            print("  " + line)
    return 1 if failed or violations else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("directory")
    parser.add_argument("--document", help="default: api/openapi.json")
    args = parser.parse_args()
    directory = os.path.abspath(args.directory)
    return start(directory, args.document) if args.action == "start" else stop(directory)


if __name__ == "__main__":
    sys.exit(main())
