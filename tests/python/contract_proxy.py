"""The contract check for the C++ end-to-end tests.

    python3 tests/python/contract_proxy.py --port 4010 --report contract.txt &
    TPUJOBS_E2E_CONTRACT_PROXY=127.0.0.1:4010 ctest --test-dir build -R e2e_service

(The CTest fixture contract_proxy, tests/python/contract_fixture.py, does
this for every e2e suite.) With TPUJOBS_E2E_CONTRACT_PROXY set,
tests/e2e/http_client.cc sends every request here with the header
X-Tpujobs-Upstream: PORT (the port of the service the test started). The
router forwards the request's bytes to 127.0.0.1:PORT (without the header:
to --upstream) and the answer's bytes back unchanged, and has each exchange
checked against api/openapi.json by Stoplight Prism's own validator
(openapi_check.cjs, through openapi_contract.py): the operation, its path,
query and header parameters and body; the answer's status, Content-Type,
headers and body.

A request the document does not allow is one of two things:
  - bad input a test sends on purpose: the service must refuse it, and it
    does with a 4xx problem+json; that answer is then checked like any
    other (its status and schema must be in the document);
  - a request the document does not describe that the service accepted
    (any other answer): a violation, named by operation and field.
Every violation is written to the report, one line each; the fixture's stop
fails on any. An answer is checked after it has been passed on, so the
check adds nothing to the time a test waits for it: `GET /_contract/flush`,
which the router answers itself, returns once every answer passed on so far
has been checked (a test reads the report after it), and so does a SIGTERM
before the router exits.

text/event-stream answers are relayed as they come, and their events are
checked as they pass against the schemas the document gives under the
media type's `x-events` (event_stream_contract.py frames them).

Each connection has its own thread; nothing is held across requests, so
concurrent requests (long polls, streams) do not wait for each other.
"""

import argparse
import http.client
import http.server
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from event_stream_contract import StreamChecker  # noqa: E402
from openapi_contract import Contract, media_type  # noqa: E402

DOCUMENT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "api", "openapi.json")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade",
              "proxy-connection", "x-tpujobs-upstream", "content-length"}


def joined(pairs) -> dict:
    """Header pairs as one value a name (repeated ones joined, as HTTP reads them)."""
    out: dict = {}
    for k, v in pairs:
        out[k] = "%s, %s" % (out[k], v) if k in out else v
    return out


class Router:
    def __init__(self, report: str, document: str, trace: str = "", upstream: int = 0):
        self.report = report
        self.upstream = upstream
        self.contract = Contract(document)
        self.lock = threading.Lock()
        self.trace = open(trace, "a", encoding="utf-8") if trace else None
        self.checked = 0  # answers checked, streams included
        self.events_checked = 0  # events of those streams
        self.refused = 0  # requests outside the document the service refused (4xx)
        self.violations = 0
        self.pending = 0  # answers passed on, not yet checked
        self.settled = threading.Condition(self.lock)

    def record(self, line: str) -> None:
        with self.lock, open(self.report, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            self.violations += 1

    def exchange(self, *arguments, **keywords) -> dict:
        """The checker's findings; a checker that fails is a finding too, and
        never costs the test its answer."""
        try:
            return self.contract.check_exchange(*arguments, **keywords)
        except Exception as e:  # noqa: BLE001: reported, then the exchange goes on
            return {"operation": None, "request": [], "answer": [
                "the router could not check the exchange: %s: %s" % (type(e).__name__, e)]}

    def event(self, *arguments) -> list:
        try:
            return self.contract.check_event(*arguments)
        except Exception as e:  # noqa: BLE001: as exchange()
            return ["the router could not check the event: %s: %s" % (type(e).__name__, e)]

    def begin(self) -> None:
        with self.lock:
            self.pending += 1

    def done(self) -> None:
        with self.lock:
            self.pending -= 1
            self.settled.notify_all()

    def flush(self, timeout: float) -> bool:
        """True once every answer passed on has been checked."""
        with self.lock:
            return self.settled.wait_for(lambda: self.pending == 0, timeout)

    def count(self, answers: int = 0, events: int = 0, refused: int = 0) -> None:
        with self.lock:
            self.checked += answers
            self.events_checked += events
            self.refused += refused

    def traced(self, method: str, target: str, status: int, through: float,
               checking: float) -> None:
        """With --trace: one line per exchange: when, its time through the
        router until passed on (the service's included), then the time its
        check took (after it was passed on)."""
        if self.trace is not None:
            with self.lock:
                self.trace.write("%.6f %.2f ms %s %s -> %d checked in %.2f ms\n" % (
                    time.time(), through * 1000, method, target, status, checking * 1000))
                self.trace.flush()

    def judge(self, request: str, found: dict, status: int, media: str) -> list:
        """The report's lines for one exchange (none: it kept the contract)."""
        where = "%s -> %d" % (request, status)
        name = found.get("operation") or "no operation"
        lines = ["%s: %s: answer: %s" % (where, name, p) for p in found.get("answer", [])]
        request_problems = found.get("request", [])
        if request_problems:
            refused = 400 <= status < 500 and media == "application/problem+json"
            if refused:
                self.count(refused=1)
                print("refused, as it should be: %s: %s: %s" % (where, name,
                                                                "; ".join(request_problems)),
                      flush=True)
            else:
                lines += ["%s: %s: a request the document does not allow, accepted: %s" %
                          (where, name, p) for p in request_problems]
        return lines


def make_handler(router: Router):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def relay(self):
            if self.path == "/_contract/flush" and "X-Tpujobs-Upstream" not in self.headers:
                settled = router.flush(600)
                self.answer(200 if settled else 504, "OK" if settled else "Not settled",
                            [("Content-Type", "text/plain")],
                            b"%d violations\n" % router.violations)
                return
            started = time.monotonic()
            upstream = int(self.headers.get("X-Tpujobs-Upstream", "0")) or router.upstream
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            connection = http.client.HTTPConnection("127.0.0.1", upstream, timeout=600)
            try:
                connection.request(self.command, self.path, body=body or None, headers=headers)
                answer = connection.getresponse()
                streaming = answer.getheader("Content-Type", "").startswith("text/event-stream")
                data = b"" if streaming else answer.read()
            except (OSError, http.client.HTTPException):
                # A service that is down (or died mid-answer) gets no answer
                # through the router either (the tests read that as status 0).
                connection.close()
                self.close_connection = True
                return
            answer_headers = joined(answer.getheaders())
            # A stream's events are checked as they pass; the rest of an
            # exchange once it has been passed on. Counted as pending from
            # before the client can have the whole answer, so that a flush
            # after it waits for its check (a stream open for long is not).
            events = self.stream(answer) if streaming else []
            router.begin()
            try:
                if not streaming:
                    kept = [(k, v) for k, v in answer.getheaders()
                            if k.lower() not in HOP_BY_HOP or
                            (self.command == "HEAD" and k.lower() == "content-length")]
                    try:
                        self.answer(answer.status, answer.reason, kept, data)
                    except OSError:
                        self.close_connection = True  # the client went away; still checked
            finally:
                connection.close()
            # Checked on a thread of its own: the client's connection goes on
            # to its next request at once, never waiting behind the checks of
            # every other suite's exchanges (one checker process serves all).
            command, path, status = self.command, self.path, answer.status
            media = media_type(answer.getheader("Content-Type"))
            through = time.monotonic() - started

            def check():
                try:
                    checking = time.monotonic()
                    found = router.exchange(command, path, headers, body, status, answer_headers,
                                            data, stream=streaming)
                    for line in router.judge("%s %s" % (command, path), found, status, media):
                        router.record(line)
                    for violation in events:
                        router.record("%s %s -> %d: %s: %s" % (command, path, status,
                                                               found.get("operation"), violation))
                    router.count(answers=1)
                    router.traced(command, path, status, through, time.monotonic() - checking)
                finally:
                    router.done()

            threading.Thread(target=check, daemon=True).start()

        def answer(self, status, reason, headers, data):
            self.send_response(status, reason)
            for k, v in headers:
                self.send_header(k, v)
            if self.command != "HEAD" or not any(k.lower() == "content-length" for k, _ in headers):
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def stream(self, answer) -> list:
            """Relays a text/event-stream as it comes; its events are checked
            as they pass (after each chunk is passed on). Returns what broke
            the contract."""
            checker = StreamChecker(lambda name, data: router.event(
                self.command, self.path, answer.status, name, data))
            try:
                self.relay_stream(answer, checker)
            except OSError:
                pass  # the client went away: the stream ends here
            finally:
                checker.finish()
                router.count(events=checker.checked)
            return checker.violations

        def relay_stream(self, answer, checker):
            self.send_response(answer.status, answer.reason)
            for k, v in answer.getheaders():
                if k.lower() not in HOP_BY_HOP:
                    self.send_header(k, v)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            while True:
                try:
                    chunk = answer.read1(65536)
                except (OSError, http.client.HTTPException):
                    return  # the service went away mid-stream
                if not chunk:
                    return
                self.wfile.write(chunk)
                self.wfile.flush()
                checker.feed(chunk)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = relay

    return Handler


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=4010)
    parser.add_argument("--upstream", type=int, default=0,
                        help="the service's port for requests without X-Tpujobs-Upstream")
    parser.add_argument("--report", default="contract-violations.txt")
    parser.add_argument("--document", default=DOCUMENT, help="default: api/openapi.json")
    parser.add_argument("--address-file", help="where to write HOST:PORT once listening "
                        "(with --port 0: a free port)")
    parser.add_argument("--trace", help="append one line per exchange here: its time through "
                        "the router")
    args = parser.parse_args()
    router = Router(os.path.abspath(args.report), args.document, args.trace or "",
                    args.upstream)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(router))
    server.daemon_threads = True
    server.request_queue_size = 128
    print("contract proxy listening on 127.0.0.1:%d; violations go to %s"
          % (server.server_address[1], router.report), flush=True)
    if args.address_file:
        # Written whole or not at all: a reader never sees half an address.
        with open(args.address_file + ".tmp", "w", encoding="utf-8") as f:
            f.write("127.0.0.1:%d\n" % server.server_address[1])
        os.replace(args.address_file + ".tmp", args.address_file)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        # Every answer passed on is checked before the counts are final.
        if not router.flush(120):
            router.record("the router stopped with %d answers unchecked" % router.pending)
        router.contract.close()
        print("contract proxy: %d answers checked, %d violations; %d stream events checked; "
              "%d requests outside the document refused with a 4xx" %
              (router.checked, router.violations, router.events_checked, router.refused),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
