"""The events of a text/event-stream answer, cut out as they pass.

api/openapi.json gives each event's `data` schema in the stream's media type,
under `x-events` (event name -> schema), an extension no OpenAPI tool reads.
This module only frames the stream into events (the HTML standard's
event-stream format); each event goes to `check(name, data)`, which is the
checker's (openapi_check.cjs: the event's name is one the document lists,
its data is JSON valid against that event's schema, by ajv's Draft 2020-12
validator).
"""

from typing import Callable, List


class StreamChecker:
    """Fed the stream's bytes as they pass; `violations` lists what broke
    the contract, each with the event's text."""

    def __init__(self, check: Callable[[str, str], List[str]]):
        self.check = check
        self.pending = b""
        self.checked = 0
        self.violations: List[str] = []

    def feed(self, chunk: bytes) -> None:
        self.pending += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self.pending:
            block, self.pending = self.pending.split(b"\n\n", 1)
            self._event(block.decode("utf-8", "replace"))

    def finish(self) -> None:
        """At the stream's end. What follows the last blank line is not an
        event yet: a client that went away, or a service that was stopped,
        cut it off; neither is the contract's to judge."""
        self.pending = b""

    def _event(self, block: str) -> None:
        name, data = "message", []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if not data:
            return  # a comment (keep-alive) or an id alone dispatches nothing
        self.checked += 1
        self.violations += self.check(name, "\n".join(data))
