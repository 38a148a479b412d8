"""api/openapi.json as a checker of real exchanges, by Stoplight Prism.

The checking is done by openapi_check.cjs, a Node process that runs Prism's
own router and validators (@stoplight/prism-http from web/node_modules, the
code behind `prism proxy --errors`) on each exchange this module hands it:
which operation a request is, its parameters, security and body, and the
answer's status, Content-Type, headers and body. This module only carries
exchanges to that process and its findings back; it is safe to call from
many threads at once (one line out and one line back per call, matched by
id).
"""

import base64
import itertools
import json
import os
import shutil
import subprocess
import threading
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "openapi_check.cjs")


def media_type(header: Optional[str]) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def node_binary() -> str:
    node = os.environ.get("TPUJOBS_NODE") or shutil.which("node")
    if not node:
        raise RuntimeError("node is not installed: the contract check runs Prism's validator "
                           "(web/node_modules, `npm ci` in web/)")
    return node


class CheckerFailed(RuntimeError):
    """The checker process died or answered nonsense: nothing is checked."""


class Contract:
    """One openapi_check.cjs process for `document_path`."""

    def __init__(self, document_path: str, startup_timeout: float = 300):
        self.process = subprocess.Popen(
            [node_binary(), CHECKER, os.path.abspath(document_path)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=None, text=True, encoding="utf-8", bufsize=1)
        ready: List[str] = []
        reader = threading.Thread(target=lambda: ready.append(self.process.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(startup_timeout)
        if not ready or ready[0].strip() != "ready":
            self.close()
            raise CheckerFailed("the OpenAPI checker did not start (%s)" %
                                ("no answer" if not ready else repr(ready[0][:200])))
        self._ids = itertools.count(1)
        # _lock guards _waiting and _dead (held briefly, never while writing);
        # _write keeps lines whole. Apart, so a writer blocked on a full pipe
        # never keeps the reader from taking answers off the other one.
        self._lock = threading.Lock()
        self._write = threading.Lock()
        self._waiting: Dict[int, Tuple[threading.Event, list]] = {}
        self._dead = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                waiting = self._waiting.pop(answer.get("id"), None)
            if waiting is not None:
                waiting[1].append(answer)
                waiting[0].set()
        with self._lock:
            self._dead = True
            waiting = list(self._waiting.values())
            self._waiting.clear()
        for event, _ in waiting:
            event.set()

    def _ask(self, message: dict) -> dict:
        done = threading.Event()
        box: list = []
        with self._lock:
            if self._dead:
                raise CheckerFailed("the OpenAPI checker has exited")
            message["id"] = next(self._ids)
            self._waiting[message["id"]] = (done, box)
        try:
            with self._write:
                self.process.stdin.write(json.dumps(message) + "\n")
                self.process.stdin.flush()
        except (OSError, ValueError) as e:
            with self._lock:
                self._waiting.pop(message["id"], None)
            raise CheckerFailed("the OpenAPI checker does not read: %s" % e) from None
        done.wait()
        if not box:
            raise CheckerFailed("the OpenAPI checker exited before it answered")
        if "error" in box[0]:
            raise CheckerFailed(box[0]["error"][:2000])
        return box[0]

    def check_exchange(self, method: str, target: str, headers: Dict[str, str], body: bytes,
                       status: int, answer_headers: Dict[str, str], answer_body: bytes,
                       stream: bool = False) -> dict:
        """{operation (None: no operation matches), request: [...], answer:
        [...], events: [names the stream may carry] (streams only)}."""
        return self._ask({
            "method": method, "target": target, "headers": headers,
            "body": base64.b64encode(body).decode("ascii") if body else "",
            "status": status, "answer_headers": answer_headers,
            "answer_body": base64.b64encode(answer_body).decode("ascii") if answer_body else "",
            "stream": stream})

    def check_event(self, method: str, target: str, status: int, name: str,
                    data: str) -> List[str]:
        """How one event of a text/event-stream answer breaks the document's x-events."""
        return self._ask({"event": {"method": method, "target": target, "status": status,
                                    "name": name, "data": data}})["event"]

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
