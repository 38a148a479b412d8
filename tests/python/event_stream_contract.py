"""The contract of a text/event-stream answer, checked event by event.

Prism reads a whole answer before it forwards it, so a live stream cannot go
through it. api/openapi.json gives each event's `data` schema in the stream's
media type, under `x-events` (event name -> schema); this module checks a
stream against it as it passes: every event has a name the document lists,
its `data` is JSON, and the JSON is valid against that event's schema
(jsonschema, Draft 2020-12, the dialect of OpenAPI 3.1).
"""

import json
import re
from typing import Dict, List, Optional

import jsonschema


def _resolved(node, document):
    """`node` with every local `$ref` replaced by what it names (the
    document's event schemas are not recursive)."""
    if isinstance(node, dict):
        if "$ref" in node and node["$ref"].startswith("#/"):
            target = document
            for part in node["$ref"][2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            return _resolved(target, document)
        return {k: _resolved(v, document) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolved(v, document) for v in node]
    return node


def _template_pattern(template: str) -> "re.Pattern[str]":
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile("^" + "".join("[^/]+" if p.startswith("{") else re.escape(p)
                                    for p in parts) + "$")


class EventStreamContract:
    def __init__(self, document_path: str):
        with open(document_path, encoding="utf-8") as f:
            self.document = json.load(f)
        self.paths = [(_template_pattern(t), item) for t, item in self.document["paths"].items()]

    def events_for(self, method: str, path: str, status: int) -> Optional[Dict[str, dict]]:
        """Event name -> schema for this answer, or None when the document
        gives no event schemas for it."""
        path = path.split("?", 1)[0]
        for pattern, item in self.paths:
            if not pattern.match(path):
                continue
            operation = item.get(method.lower(), {})
            answer = operation.get("responses", {}).get(str(status))
            if answer is None:
                return None
            answer = _resolved(answer, self.document)
            media = answer.get("content", {}).get("text/event-stream", {})
            return media.get("x-events")
        return None

    def checker(self, method: str, path: str, status: int) -> Optional["StreamChecker"]:
        events = self.events_for(method, path, status)
        return StreamChecker(events) if events is not None else None


class StreamChecker:
    """Fed the stream's bytes as they pass; `violations` lists what broke
    the contract, each with the event's text."""

    def __init__(self, events: Dict[str, dict]):
        self.validators = {name: jsonschema.Draft202012Validator(schema)
                           for name, schema in events.items()}
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
        text = "\n".join(data)
        validator = self.validators.get(name)
        if validator is None:
            self.violations.append("event %r is not in the document's x-events (%s): %s"
                                   % (name, ", ".join(sorted(self.validators)), text[:500]))
            return
        try:
            value = json.loads(text)
        except ValueError as e:
            self.violations.append("event %r: data is not JSON (%s): %s" % (name, e, text[:500]))
            return
        for error in validator.iter_errors(value):
            where = "/".join(str(p) for p in error.absolute_path) or "data"
            self.violations.append("event %r: %s: %s: %s" % (name, where, error.message,
                                                             text[:500]))
