"""Typed exceptions made from the service's application/problem+json answers."""

import json
from typing import Any, Dict, List, NamedTuple, Optional


class FieldError(NamedTuple):
    """One refused field of a spec: where, the exact upstream message, what to change."""

    field: str
    message: str
    hint: Optional[str] = None


class TpujobsError(Exception):
    """Any answer of the service that is not the one asked for.

    ``status`` is the HTTP status (0 when no answer came), ``problem`` the
    problem+json body as a dict ({} when there was none).
    """

    def __init__(self, message: str, status: int = 0, problem: Optional[Dict[str, Any]] = None,
                 headers: Optional[Dict[str, str]] = None, method: str = "", path: str = ""):
        super().__init__(message)
        self.status = status
        self.problem = problem or {}
        self.headers = headers or {}
        self.method = method
        self.path = path

    @property
    def title(self) -> Optional[str]:
        return self.problem.get("title")

    @property
    def detail(self) -> Optional[str]:
        return self.problem.get("detail")

    @property
    def hint(self) -> Optional[str]:
        return self.problem.get("hint")


class BadRequest(TpujobsError):
    """400, 413, 415: the request itself is malformed (bad JSON, too large, wrong type)."""


class Unauthorized(TpujobsError):
    """401: no token, or an unknown or revoked one."""


class Forbidden(TpujobsError):
    """403: the token's role may not do this (admin operations)."""


class NotFound(TpujobsError):
    """404: no such job, host or route (another tenant's job is a 404 too)."""


class CheckUnavailable(NotFound):
    """The service has no ``POST /v1/checks`` (an older service)."""


class Conflict(TpujobsError):
    """409: an idempotency key reused with another body, a cancel of an ended job, ..."""


class TooManyRequests(TpujobsError):
    """429: a tenant limit (requests or submits per second, jobs queued at
    once); ``retry_after`` is the seconds the service asked to wait, and the
    problem names the limit (``problem["limit"]``, ``["value"]``)."""

    @property
    def retry_after(self) -> Optional[float]:
        return parse_retry_after(self.headers.get("retry-after"))


class SpecRejected(TpujobsError):
    """422: the spec (or body) was refused; ``errors`` names each field."""

    @property
    def errors(self) -> List[FieldError]:
        listed = self.problem.get("errors")
        if isinstance(listed, list):
            return [FieldError(str(e.get("field", "")), str(e.get("message", "")), e.get("hint"))
                    for e in listed if isinstance(e, dict)]
        if "field" in self.problem:
            return [FieldError(str(self.problem["field"]), str(self.problem.get("detail", "")),
                               self.problem.get("hint"))]
        return []

    @property
    def warnings(self) -> List[str]:
        return [str(w) for w in self.problem.get("warnings", []) or []]


class ServerError(TpujobsError):
    """5xx: the service failed."""


class Unavailable(ServerError):
    """503 (or 502/504), or the service could not be reached (``status`` 0).

    ``retry_after`` is the seconds the service asked to wait, or None.
    """

    @property
    def retry_after(self) -> Optional[float]:
        return parse_retry_after(self.headers.get("retry-after"))


class Timeout(TpujobsError, TimeoutError):
    """A wait's timeout passed before the job ended; ``job`` is its last view."""

    def __init__(self, message: str, job: Any = None):
        super().__init__(message)
        self.job = job


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After in seconds (the delta-seconds form the service sends)."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
              413: BadRequest, 415: BadRequest, 422: SpecRejected, 429: TooManyRequests,
              502: Unavailable,
              503: Unavailable, 504: Unavailable}


def error_from_response(status: int, headers: Dict[str, str], body: bytes, method: str,
                        path: str) -> TpujobsError:
    """The exception an answer stands for, from its status and problem+json body."""
    problem: Dict[str, Any] = {}
    try:
        parsed = json.loads(body.decode("utf-8")) if body else {}
        if isinstance(parsed, dict):
            problem = parsed
    except (ValueError, UnicodeDecodeError):
        pass
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else TpujobsError
    text = problem.get("detail") or problem.get("title") or body[:200].decode("utf-8", "replace")
    message = "%s %s: %d %s" % (method, path, status, text)
    if problem.get("hint"):
        message += " (hint: %s)" % problem["hint"]
    if cls is SpecRejected:
        for e in SpecRejected("", status, problem).errors:
            message += "\n  %s: %s" % (e.field, e.message)
    return cls(message, status, problem, headers, method, path)
