"""A job of the service: its last view, and the calls about it."""

import http.client
import json
import time
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional

from ._http import operation, parse_events
from .errors import ServerError, Timeout, TpujobsError, Unavailable

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

TERMINAL_STATES = ("SUCCEEDED", "FAILED", "CANCELLED")


class LogLine(Dict[str, Any]):
    """One log line: ``seq`` (its sequence number) and ``line`` (the text)."""

    @property
    def seq(self) -> int:
        return int(self["seq"])

    @property
    def line(self) -> str:
        return str(self["line"])


class Job:
    """The view of one job (the JSON of ``GET /v1/jobs/{id}``) in ``data``.

    Its fields read as attributes too: ``job.state``, ``job.result``,
    ``job.error``, ``job.array``. ``refresh()`` and ``wait()`` update it.
    """

    def __init__(self, client: "Client", data: Dict[str, Any]):
        self._client = client
        self.data = data
        self.final_state: Optional[str] = None  # set by follow_logs() at the stream's end

    def __repr__(self) -> str:
        return "Job(id=%s, state=%s, name=%r)" % (self.id, self.state, self.data.get("name"))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "data":
            raise AttributeError(name)
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError("job %s has no field %r" % (self.data.get("id"), name)) from None

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @property
    def id(self) -> int:
        return int(self.data["id"])

    @property
    def state(self) -> str:
        return str(self.data.get("state", ""))

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def succeeded(self) -> bool:
        return self.state == "SUCCEEDED"

    @operation("GET", "/v1/jobs/{id}")
    def refresh(self) -> "Job":
        """Reads the job's view again."""
        self.data = self._client._http.json_call("GET", "/v1/jobs/{id}", path_params={"id": self.id},
                                                 safe=True)
        return self

    @operation("GET", "/v1/jobs/{id}/wait")
    def wait(self, timeout: Optional[float] = None, poll: int = 30) -> "Job":
        """Long-polls until the job ends; returns it. ``timeout`` (seconds, None:
        no limit) passing first raises ``Timeout`` carrying the last view. A
        restarting service (no answer, 503) is waited out within the timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        poll = max(0, min(int(poll), 300))
        while not self.terminal:
            seconds = poll
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Timeout("job %d is still %s after %g s" % (self.id, self.state, timeout),
                                  self)
                seconds = max(0, min(poll, int(remaining)))
            try:
                self.data = self._client._http.json_call(
                    "GET", "/v1/jobs/{id}/wait", path_params={"id": self.id},
                    query={"timeout": seconds}, safe=True, timeout=seconds + 60)
            except Unavailable:
                if deadline is not None and time.monotonic() >= deadline:
                    raise Timeout("job %d: the service was unavailable until the timeout passed"
                                  % self.id, self) from None
                time.sleep(0.5)
                continue
            if seconds == 0 and not self.terminal:
                time.sleep(0.2)
        return self

    @operation("POST", "/v1/jobs/{id}/cancel")
    def cancel(self) -> "Job":
        """Cancels the job (202); raises ``Conflict`` when it has already ended."""
        self.data = self._client._http.json_call("POST", "/v1/jobs/{id}/cancel",
                                                 path_params={"id": self.id}, expect=(202,))
        return self

    @operation("GET", "/v1/jobs/{id}/logs")
    def logs(self, after: int = 0, limit: Optional[int] = None) -> List[LogLine]:
        """Every stored log line after sequence number ``after`` (following pages)."""
        lines: List[LogLine] = []
        while True:
            page = self._client._http.json_call(
                "GET", "/v1/jobs/{id}/logs", path_params={"id": self.id},
                query={"after": after, "limit": limit or 10000}, safe=True)
            batch = [LogLine(line) for line in page.get("lines", [])]
            lines.extend(batch)
            if not batch or limit is not None:
                return lines
            after = int(page.get("next_after", batch[-1].seq))

    def follow_logs(self, after: int = 0, reconnect_for: float = 300.0) -> Iterator[LogLine]:
        """Yields the job's log lines as they are written (the SSE stream), until
        the job ends. A dropped stream (a restart, a proxy) is reopened from the
        last sequence number seen, so no line is lost or repeated; ``reconnect_for``
        seconds without a working stream raise ``Unavailable``. At the end
        ``final_state`` holds the state the stream ended with."""
        failing_since: Optional[float] = None
        delay = 0.2
        while True:
            try:
                for event in parse_events(self._client._http.stream(
                        "/v1/jobs/{id}/logs", {"id": self.id}, {"after": after},
                        {"Last-Event-ID": str(after)} if after else {}, read_timeout=90)):
                    failing_since, delay = None, 0.2
                    if event.name == "log":
                        line = LogLine(json.loads(event.data))
                        if line.seq <= after:
                            continue
                        after = line.seq
                        yield line
                    elif event.name == "end":
                        self.final_state = json.loads(event.data).get("state")
                        return
            except TpujobsError as e:
                if not isinstance(e, ServerError):
                    raise
            except (OSError, http.client.HTTPException):
                pass
            # The stream ended without "end", or failed: reopen after `after`.
            now = time.monotonic()
            failing_since = failing_since or now
            if now - failing_since > reconnect_for:
                raise Unavailable("the log stream of job %d could not be reopened for %g s"
                                  % (self.id, reconnect_for), 0)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    @operation("GET", "/v1/jobs/{id}/metrics")
    def metrics(self, after: int = 0) -> List[Dict[str, Any]]:
        """The per-step points (``step``, ``epoch``, ``values``: loss, val_loss, ...)."""
        points: List[Dict[str, Any]] = []
        while True:
            page = self._client._http.json_call("GET", "/v1/jobs/{id}/metrics",
                                                path_params={"id": self.id},
                                                query={"after": after}, safe=True)
            batch = page.get("points", [])
            points.extend(batch)
            next_after = page.get("next_after")
            if not batch or next_after is None or int(next_after) <= after:
                return points
            after = int(next_after)

    @operation("GET", "/v1/jobs/{id}/events")
    def events(self) -> List[Dict[str, Any]]:
        """The job's state changes: ``at``, ``from``, ``to``, ``reason``."""
        return self._client._http.json_call("GET", "/v1/jobs/{id}/events",
                                            path_params={"id": self.id}, safe=True)["events"]

    @operation("GET", "/v1/jobs/{id}/xla-report")
    def xla_report(self) -> str:
        """The torch_xla-style metrics report (text); ``Conflict`` before it exists."""
        return self._client._http.call("GET", "/v1/jobs/{id}/xla-report",
                                       path_params={"id": self.id}, safe=True,
                                       headers={"Accept": "text/plain"}).text()

    @operation("GET", "/v1/jobs/{id}/notifications")
    def notifications(self) -> List[Dict[str, Any]]:
        """The job's webhook deliveries, each with its attempts."""
        answer = self._client._http.json_call("GET", "/v1/jobs/{id}/notifications",
                                              path_params={"id": self.id}, safe=True)
        return answer["notifications"]
