"""The real service and the contract check the Python client's tests run
against: the built `tpujobs serve` (a private state dir, so a private
embedded PostgreSQL, on a free loopback port), and the contract router in
front of it (contract_proxy.py, the one the e2e suites go through), which
relays the bytes unchanged and has Stoplight Prism's validator check every
request and answer against api/openapi.json."""

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
from typing import List, Optional

BINARY = os.environ["TPUJOBS_BINARY"]
SOURCE = os.environ["TPUJOBS_SOURCE_DIR"]
DOCUMENT = os.path.join(SOURCE, "api", "openapi.json")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_line(path: str, pattern: str, process: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if re.search(pattern, text):
            return text
        if process.poll() is not None:
            raise RuntimeError("%s exited (%s) before %r:\n%s" %
                               (process.args[0], process.returncode, pattern, text))
        time.sleep(0.05)
    raise RuntimeError("no %r within %g s in %s" % (pattern, timeout, path))


def binary_environment():
    # In the ASan build the binary aborts on a memory error or UB; leaks are
    # the in-process tests' business, not of every process a test stops.
    return dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")


class Service:
    """`tpujobs serve` on a fixed free port (kept across restarts, so a client
    reconnects to the same URL) with a temporary state directory."""

    def __init__(self, pool: str = "v3-8", extra: Optional[List[str]] = None):
        self.state_dir = tempfile.mkdtemp(prefix="tpujobs-py-")
        self.port = free_port()
        self.pool = pool
        self.extra = list(extra or [])
        self.process: Optional[subprocess.Popen] = None
        self.log_path = os.path.join(self.state_dir, "service.log")

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout: float = 120) -> "Service":
        env = binary_environment()
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [BINARY, "serve", "--listen", "127.0.0.1:%d" % self.port, "--pool", self.pool,
             "--state-dir", self.state_dir] + self.extra,
            stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        _wait_for_line(self.log_path, r"listening on http://127\.0\.0\.1:%d" % self.port,
                       self.process, timeout)
        return self

    def stop(self, timeout: float = 60) -> Optional[int]:
        if self.process is None:
            return None
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.process = None
        return code

    def restart(self) -> None:
        self.stop()
        # The listening line of the new process must be a new one.
        with open(self.log_path, "a") as f:
            f.write("\n--- restarted by the test ---\n")
        os.replace(self.log_path, self.log_path + ".1")
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def create_token(self, tenant: str, role: str = "user") -> str:
        out = subprocess.run([BINARY, "token", "create", "--tenant", tenant, "--role", role,
                              "--state-dir", self.state_dir], check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=binary_environment())
        return out.stdout.strip().splitlines()[0]

    def postmaster_pid(self) -> int:
        with open(os.path.join(self.state_dir, "pgdata", "postmaster.pid")) as f:
            return int(f.readline())


def process_tree(root: int) -> List[int]:
    """``root`` and every live process descended from it, root first."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
                parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                continue
    tree, frontier = [root], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree += children
        frontier += children
    return tree


ROUTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contract_proxy.py")


class ContractProxy:
    """The contract router (contract_proxy.py) in front of one service: it
    relays every request and answer unchanged and has Prism's validator
    (openapi_check.cjs) check both against api/openapi.json. A request the
    document does not allow must be refused by the service with a 4xx
    problem+json the document lists; anything else that breaks the document
    is a line of its report, which ``violations()`` reads."""

    def __init__(self, upstream: str, document: str = DOCUMENT):
        self.directory = tempfile.mkdtemp(prefix="tpujobs-contract-")
        self.report = os.path.join(self.directory, "violations.txt")
        self.log_path = os.path.join(self.directory, "router.log")
        address = os.path.join(self.directory, "address")
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, ROUTER, "--port", "0", "--upstream",
             str(urllib.parse.urlsplit(upstream).port), "--report", self.report,
             "--document", document, "--address-file", address],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        # The address file is written (whole) once the router listens.
        deadline = time.monotonic() + 300
        while not os.path.exists(address):
            if self.process.poll() is not None or time.monotonic() > deadline:
                with open(self.log_path, encoding="utf-8", errors="replace") as f:
                    log = f.read()
                self.close()
                raise RuntimeError("the contract router did not start:\n" + log)
            time.sleep(0.05)
        with open(address, encoding="utf-8") as f:
            self.url = "http://" + f.read().strip()
        self._read = 0

    def settle(self) -> None:
        """Returns once every answer the router has passed on is checked
        (it checks an answer after passing it on)."""
        if self.process.poll() is not None:
            return
        host, port = self.url[len("http://"):].rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=900)
        try:
            connection.request("GET", "/_contract/flush")
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                raise RuntimeError("the contract router did not settle: %d" % answer.status)
        finally:
            connection.close()

    def violations(self) -> List[str]:
        """The report's lines since the last call, every answer so far checked."""
        self.settle()
        if not os.path.exists(self.report):
            return []
        with open(self.report, encoding="utf-8", errors="replace") as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
        found, self._read = lines[self._read:], len(lines)
        return found

    def close(self) -> None:
        """Stops the router (it checks what it passed on first); raises on a
        violation no test read yet."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(180)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        left = self.violations()
        if os.environ.get("TPUJOBS_KEEP_TEST_LOGS"):
            print("contract router's files kept in %s" % self.directory)
        else:
            shutil.rmtree(self.directory, ignore_errors=True)
        if left:
            raise AssertionError("answers or requests that api/openapi.json does not allow, "
                                 "found after the last test:\n" + "\n".join(left))


class ContractTestCase(unittest.TestCase):
    """A test whose every exchange through ``cls.proxies`` must match the
    document: tearDown fails the test on any violation the router reported."""

    proxies: List[ContractProxy] = []

    def tearDown(self) -> None:
        found = [v for proxy in type(self).proxies for v in proxy.violations()]
        if found:
            self.fail("answers or requests that api/openapi.json does not allow:\n\n" +
                      "\n\n".join(found))


def job_spec(**overrides):
    """A small job that trains for real in a second or two (iris on one core)."""
    import tpujobs
    spec = tpujobs.spec(
        name=overrides.pop("name", "py-client"),
        trainer=dict(accelerator="tpu", devices=1, precision="bf16-true", max_epochs=2,
                     log_every_n_steps=1, seed=7),
        model=tpujobs.mlp([16], classes=3), data=dict(dataset="iris", batch_size=16),
        optimizer=dict(type="adam", lr=0.01))
    return tpujobs.with_values(spec, **overrides)


def start_module(pool: str = "v3-8", extra: Optional[List[str]] = None,
                 service: Optional[Service] = None, contract: bool = True):
    """A test module's service and its contract router (none without
    ``contract``). Returns (service, [router])."""
    service = (service or Service(pool=pool, extra=extra)).start()
    if not contract:
        return service, []
    try:
        proxies = [ContractProxy(service.url)]
    except BaseException:
        service.close()  # setUpModule failed: no tearDownModule will
        raise
    ContractTestCase.proxies = proxies
    return service, proxies


def close_all(*parts) -> None:
    """Closes proxies before the service they front; every part is closed
    even when one raises (the first error is raised at the end)."""
    errors = []
    for part in parts:
        try:
            if isinstance(part, list):
                close_all(*part)
            elif part is not None:
                part.close()
        except Exception as e:  # noqa: BLE001: raised below, after the rest is closed
            errors.append(e)
    if errors:
        raise errors[0]
