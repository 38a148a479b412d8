"""The contract check for the C++ end-to-end tests (opt-in).

    python3 tests/python/contract_proxy.py --port 4010 --report contract.txt &
    TPUJOBS_E2E_CONTRACT_PROXY=127.0.0.1:4010 ctest --test-dir build -R e2e_service

With TPUJOBS_E2E_CONTRACT_PROXY set, tests/e2e/http_client.cc sends every
request here with the header X-Tpujobs-Upstream: PORT (the port of the
service the test started). This router starts one Stoplight Prism proxy
(`prism proxy api/openapi.json http://127.0.0.1:PORT --errors`) per
upstream port and forwards through it, so each answer is checked against
api/openapi.json. An answer Prism finds wrong (a body or content type: its
500; a status code the document lacks: its `sl-violations` warning) is
written to the report and answered as a 500 problem+json naming the
violation, so the test that got it fails where it happened.

Requests are checked too with --validate-requests (off by default: the
hostile and malformed-request tests send invalid requests on purpose).
text/event-stream requests go straight to the service: Prism reads a whole
answer before it forwards it, which a live stream never ends. Their events
are checked here as they pass, against the schemas the document gives
under the media type's `x-events` (tests/python/event_stream_contract.py);
a stream that breaks them is a violation in the report.
"""

import argparse
import http.client
import http.server
import json
import os
import signal
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TPUJOBS_BINARY", "")
os.environ.setdefault("TPUJOBS_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from event_stream_contract import EventStreamContract  # noqa: E402
from harness import DOCUMENT, ContractProxy  # noqa: E402

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade",
              "proxy-connection", "x-tpujobs-upstream", "content-length", "host"}


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return True
    except OSError:
        return False


class Router:
    def __init__(self, report: str, validate_requests: bool, document: str):
        self.document = document
        self.report = report
        self.validate_requests = validate_requests
        self.proxies = {}
        self.streams = EventStreamContract(document)
        self.lock = threading.Lock()
        self.checked = 0  # answers that went through a Prism proxy, and streams
        self.events_checked = 0  # events of those streams
        self.violations = 0

    def proxy_for(self, upstream: int) -> ContractProxy:
        with self.lock:
            if upstream not in self.proxies:
                # Each e2e service is a new port: the proxies of services that
                # have stopped are stopped too.
                for port in [p for p in self.proxies if not listening(p)]:
                    self.proxies.pop(port).close()
                self.proxies[upstream] = ContractProxy("http://127.0.0.1:%d" % upstream,
                                                       self.validate_requests, self.document)
            return self.proxies[upstream]

    def record(self, line: str) -> None:
        with self.lock, open(self.report, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            self.violations += 1

    def close(self) -> None:
        for proxy in self.proxies.values():
            proxy.close()


def make_handler(router: Router):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def relay(self):
            upstream = int(self.headers.get("X-Tpujobs-Upstream", "0"))
            if not listening(upstream):
                # A service that is down gets no answer through the router
                # either (the tests read that as status 0).
                self.close_connection = True
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            streaming = "text/event-stream" in self.headers.get("Accept", "")
            port = upstream if streaming else router.proxy_for(upstream).port
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=400)
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
            except OSError as e:
                self.send_error(502, "cannot reach 127.0.0.1:%d: %s" % (port, e))
                return
            violations = answer.getheader("sl-violations")
            if streaming:
                self.stream(answer)
                connection.close()
                return
            data = answer.read()
            connection.close()
            with router.lock:
                router.checked += 1
            if violations or b"stoplight.io/prism/errors" in data[:200]:
                text = "%s %s -> %d: %s %s" % (self.command, self.path, answer.status,
                                               violations or "", data[:2000].decode("utf-8",
                                                                                    "replace"))
                router.record(text)
                data = json.dumps({"type": "about:blank", "title": "Contract violation",
                                   "status": 500, "detail": text}).encode()
                self.answer(500, [("Content-Type", "application/problem+json")], data)
                return
            kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in HOP_BY_HOP
                    and not k.lower().startswith("access-control-")]
            self.answer(answer.status, kept, data)

        def answer(self, status, headers, data):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def stream(self, answer):
            checker = None
            if answer.getheader("Content-Type", "").startswith("text/event-stream"):
                checker = router.streams.checker(self.command, self.path, answer.status)
                if checker is None:
                    router.record("%s %s -> %d: a text/event-stream answer the document "
                                  "gives no x-events for" % (self.command, self.path,
                                                              answer.status))
            try:
                self.relay_stream(answer, checker)
            finally:
                if checker is not None:
                    checker.finish()
                    with router.lock:
                        router.checked += 1
                        router.events_checked += checker.checked
                    for violation in checker.violations:
                        router.record("%s %s -> %d: %s" % (self.command, self.path,
                                                           answer.status, violation))

        def relay_stream(self, answer, checker):
            self.send_response(answer.status)
            for k, v in answer.getheaders():
                if k.lower() not in HOP_BY_HOP:
                    self.send_header(k, v)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            while True:
                chunk = answer.read1(65536)
                if not chunk:
                    return
                if checker is not None:
                    checker.feed(chunk)
                self.wfile.write(chunk)
                self.wfile.flush()

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = relay

    return Handler


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=4010)
    parser.add_argument("--report", default="contract-violations.txt")
    parser.add_argument("--validate-requests", action="store_true")
    parser.add_argument("--document", default=DOCUMENT, help="default: api/openapi.json")
    parser.add_argument("--address-file", help="where to write HOST:PORT once listening "
                        "(with --port 0: a free port)")
    args = parser.parse_args()
    router = Router(os.path.abspath(args.report), args.validate_requests, args.document)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(router))
    print("contract proxy listening on 127.0.0.1:%d; violations go to %s"
          % (server.server_address[1], router.report), flush=True)
    if args.address_file:
        # Written whole or not at all: a reader never sees half an address.
        with open(args.address_file + ".tmp", "w", encoding="utf-8") as f:
            f.write("127.0.0.1:%d\n" % server.server_address[1])
        os.replace(args.address_file + ".tmp", args.address_file)
    # SIGTERM (how the tests stop it) stops the Prism proxies it started too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        router.close()
        print("contract proxy: %d answers checked, %d violations; %d stream events checked" %
              (router.checked, router.violations, router.events_checked), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
