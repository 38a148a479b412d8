"""HTTP/1.1 to the service over the standard library (http.client), with
bearer auth, problem+json errors, retries of safe calls, and an SSE parser."""

import http.client
import json
import time
import urllib.parse
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple

from .errors import TooManyRequests, TpujobsError, Unavailable, error_from_response

DEFAULT_URL = "http://127.0.0.1:8080"
USER_AGENT = "tpujobs-python/0.1.0"

# Every (method, path template) the client may send; filled by @operation.
OPERATIONS: Dict[Tuple[str, str], str] = {}


def operation(method: str, template: str):
    """Declares that the decorated client method calls ``method template``."""

    def register(func):
        calls = getattr(func, "__tpujobs_operations__", [])
        func.__tpujobs_operations__ = calls + [(method, template)]
        OPERATIONS.setdefault((method, template), func.__qualname__)
        return func

    return register


class Response(NamedTuple):
    status: int
    headers: Dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))

    def text(self) -> str:
        return self.body.decode("utf-8")


class Event(NamedTuple):
    """One text/event-stream event."""

    name: str
    data: str
    id: Optional[str]


def parse_events(chunks: Iterator[bytes]) -> Iterator[Event]:
    """The events of a text/event-stream, as the HTML standard parses them."""
    buffer = b""
    name, data, last_id = "", [], None  # type: str, List[str], Optional[str]
    for chunk in chunks:
        buffer += chunk
        while True:
            cut = buffer.find(b"\n")
            if cut < 0:
                break
            line = buffer[:cut].rstrip(b"\r").decode("utf-8", "replace")
            buffer = buffer[cut + 1:]
            if line == "":
                if data:
                    yield Event(name or "message", "\n".join(data), last_id)
                name, data = "", []
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                last_id = value


class Transport:
    """Sends requests to one service. Safe calls (GETs, idempotent writes) are
    retried on no answer, on 502/503/504 and on 429, honouring Retry-After."""

    def __init__(self, url: Optional[str], token: Optional[str], timeout: float = 60.0,
                 retries: int = 5, max_backoff: float = 10.0,
                 sleep: Callable[[float], None] = time.sleep):
        parsed = urllib.parse.urlsplit(url or DEFAULT_URL)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("TPUJOBS_URL must look like http://host:port, got %r" % url)
        self.url = url or DEFAULT_URL
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self._base = parsed.path.rstrip("/")
        self.token = token or None
        self.timeout = timeout
        self.retries = max(1, retries)
        self.max_backoff = max_backoff
        self._sleep = sleep

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def target(self, template: str, path_params: Mapping[str, Any],
               query: Optional[Mapping[str, Any]]) -> str:
        if not any(template == t for (_, t) in OPERATIONS):
            raise AssertionError("no client operation declares the path %s" % template)
        path = template
        for key, value in path_params.items():
            path = path.replace("{%s}" % key, urllib.parse.quote(str(value), safe=""))
        pairs: List[Tuple[str, str]] = []
        for key, value in (query or {}).items():
            if value is None:
                continue
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                if isinstance(v, bool):
                    v = "true" if v else "false"
                pairs.append((key, str(v)))
        return self._base + path + ("?" + urllib.parse.urlencode(pairs) if pairs else "")

    def _headers(self, extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        headers.update(extra or {})
        return headers

    def send_once(self, method: str, target: str, body: Optional[bytes],
                  headers: Dict[str, str], timeout: float) -> Response:
        connection = self._connection(timeout)
        try:
            connection.request(method, target, body=body, headers=headers)
            answer = connection.getresponse()
            data = answer.read()
            return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, data)
        finally:
            connection.close()

    def call(self, method: str, template: str, path_params: Optional[Mapping[str, Any]] = None,
             query: Optional[Mapping[str, Any]] = None, body: Optional[bytes] = None,
             content_type: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
             safe: bool = False, timeout: Optional[float] = None,
             expect: Tuple[int, ...] = (200,)) -> Response:
        """Sends and returns the answer whose status is in ``expect``; raises the
        typed error of any other. ``safe``: retried on no answer, 502-504 and 429."""
        target = self.target(template, path_params or {}, query)
        sent = self._headers(headers)
        if content_type:
            sent["Content-Type"] = content_type
        attempts = self.retries if safe else 1
        delay = 0.25
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self.send_once(method, target, body, sent, timeout or self.timeout)
            except (OSError, http.client.HTTPException) as e:
                if last:
                    raise Unavailable("cannot reach the service at %s (%s %s): %s" %
                                      (self.url, method, target, e), 0, {}, {}, method, target)
                self._sleep(delay)
                delay = min(delay * 2, self.max_backoff)
                continue
            if response.status in expect:
                return response
            error = error_from_response(response.status, response.headers, response.body,
                                        method, target)
            if not isinstance(error, (Unavailable, TooManyRequests)) or last:
                raise error
            wait = error.retry_after
            self._sleep(min(wait if wait is not None else delay, self.max_backoff))
            delay = min(delay * 2, self.max_backoff)
        raise AssertionError("unreachable")

    def json_call(self, method: str, template: str, payload: Any = None, **kwargs: Any) -> Any:
        body = None
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            kwargs.setdefault("content_type", "application/json")
        return self.call(method, template, body=body, **kwargs).json()

    def stream(self, template: str, path_params: Mapping[str, Any],
               query: Optional[Mapping[str, Any]], headers: Mapping[str, str],
               read_timeout: float) -> Iterator[bytes]:
        """GETs with Accept: text/event-stream and yields the body's bytes as they
        come. Raises the typed error of a non-200 answer; a drop ends the iterator
        with the OSError or HTTPException."""
        target = self.target(template, path_params, query)
        sent = self._headers(headers)
        sent["Accept"] = "text/event-stream"
        connection = self._connection(read_timeout)
        try:
            connection.request("GET", target, headers=sent)
            answer = connection.getresponse()
            if answer.status != 200:
                data = answer.read()
                raise error_from_response(answer.status,
                                          {k.lower(): v for k, v in answer.getheaders()}, data,
                                          "GET", target)
            while True:
                chunk = answer.read1(65536) if hasattr(answer, "read1") else answer.read(1)
                if not chunk:
                    return
                yield chunk
        finally:
            connection.close()

