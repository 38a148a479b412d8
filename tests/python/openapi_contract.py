"""api/openapi.json as a checker of real exchanges: requests and answers.

OpenAPI 3.1's schemas are JSON Schema Draft 2020-12; they are checked with
jsonschema (Debian's python3-jsonschema). This module does the OpenAPI part
around them:
  request  the path matches an operation (literal paths before templated
           ones); each path, query and header parameter the operation
           declares is read as its schema's type and validated; a query
           parameter it does not declare, a required one missing, a body
           the operation takes none of, a Content-Type it does not list, or
           a JSON body against its schema are violations.
  answer   the status is listed (or its range, or `default`); the
           Content-Type is one the answer lists; a JSON body is valid
           against that media type's schema; an answer listed without
           content has no body.
Each violation names the operation (operationId), where (`query parameter
limit`, `body/trainer/devices`, ...) and the schema's message.

The document's schemas have no cycles, so each `$ref` is replaced by what it
names once, up front: the validators then hold no resolver and are safe to
share between the router's threads.
"""

import json
import re
from typing import Dict, List, Optional, Tuple
from urllib.parse import parse_qsl, unquote, urlsplit

import jsonschema

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def resolved(node, document, seen=()):
    """`node` with every local `$ref` replaced by what it names."""
    if isinstance(node, dict):
        if "$ref" in node and node["$ref"].startswith("#/"):
            ref = node["$ref"]
            if ref in seen:
                raise ValueError("recursive $ref %s" % ref)
            target = document
            for part in ref[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            return resolved(target, document, seen + (ref,))
        return {k: resolved(v, document, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [resolved(v, document, seen) for v in node]
    return node


def media_type(header: Optional[str]) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def is_json(media: str) -> bool:
    return media == "application/json" or media.endswith("+json")


def template_pattern(template: str) -> "re.Pattern[str]":
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile("^" + "".join("(?P<%s>[^/]+?)" % p[1:-1] if p.startswith("{")
                                    else re.escape(p) for p in parts) + "$")


def read_as(value: str, schema: dict):
    """A parameter's text as its schema's type (style simple/form); left as
    text when it does not read as that type, so the schema names it."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "integer" in kinds and re.fullmatch(r"-?\d+", value):
        return int(value)
    if "number" in kinds:
        try:
            return float(value)
        except ValueError:
            pass
    if "boolean" in kinds and value in ("true", "false"):
        return value == "true"
    return value


def parse_json(body: bytes):
    """(value, "") or (None, why the body is not JSON this checker can read)."""
    try:
        return json.loads(body), ""
    except ValueError as e:
        return None, "not JSON (%s)" % e
    except RecursionError:
        # Valid or not, nested deeper than Python's parser goes: the
        # service's answer is what is checked then (a refusal, a 4xx).
        return None, "not read: nested deeper than Python's recursion limit"


def schema_errors(validator, value, where: str) -> List[str]:
    found = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in error.absolute_path)
        found.append("%s: %s" % ("%s/%s" % (where, path) if path else where,
                                 error.message[:400]))
    return found


class Operation:
    def __init__(self, method: str, template: str, item: dict, operation: dict, document: dict):
        self.method = method.upper()
        self.template = template
        self.id = operation.get("operationId", "%s %s" % (self.method, template))
        self.pattern = template_pattern(template)
        self.literal = len(re.sub(r"\{[^}]+\}", "", template))
        parameters = resolved(item.get("parameters", []) + operation.get("parameters", []),
                              document)
        self.parameters = {(p["in"], p["name"].lower() if p["in"] == "header" else p["name"]): p
                           for p in parameters}
        self.validators = {key: jsonschema.Draft202012Validator(p.get("schema", {}))
                           for key, p in self.parameters.items()}
        body = resolved(operation.get("requestBody"), document) if "requestBody" in operation \
            else None
        self.body_required = bool(body and body.get("required"))
        self.body_media = {m.lower(): jsonschema.Draft202012Validator(c.get("schema", {}))
                           for m, c in (body or {}).get("content", {}).items()}
        self.responses = {}
        for status, answer in operation.get("responses", {}).items():
            answer = resolved(answer, document)
            self.responses[status] = {
                m.lower(): jsonschema.Draft202012Validator(c.get("schema", {}))
                for m, c in answer.get("content", {}).items()}

    def __str__(self) -> str:
        return "%s (%s %s)" % (self.id, self.method, self.template)


class Contract:
    def __init__(self, document_path: str):
        with open(document_path, encoding="utf-8") as f:
            self.document = json.load(f)
        self.operations: List[Operation] = []
        for template, item in self.document["paths"].items():
            for method in METHODS:
                if method in item:
                    self.operations.append(Operation(method, template, item, item[method],
                                                     self.document))
        # Literal paths first: /v1/jobs:validate before /v1/jobs/{id}.
        self.operations.sort(key=lambda o: -o.literal)
        problem = self.document.get("components", {}).get("schemas", {}).get("Problem")
        self.problem = jsonschema.Draft202012Validator(resolved(problem, self.document)) \
            if problem else None

    def operation(self, method: str, path: str) -> Tuple[Optional[Operation], dict, str]:
        """(operation, path parameters, "") or (None, {}, why not)."""
        methods = []
        for operation in self.operations:
            match = operation.pattern.match(path)
            if match:
                if operation.method == method.upper():
                    return operation, {k: unquote(v) for k, v in match.groupdict().items()}, ""
                methods.append(operation.method)
        if methods:
            return None, {}, "%s %s: the document has only %s for this path" % (
                method, path, ", ".join(sorted(set(methods))))
        return None, {}, "%s %s: no path of the document matches" % (method, path)

    def check_request(self, method: str, target: str, headers: Dict[str, str],
                      body: bytes) -> Tuple[Optional[Operation], List[str]]:
        """The operation `target` is, and how the request breaks its contract."""
        split = urlsplit(target)
        operation, path_values, why = self.operation(method, split.path)
        if operation is None:
            return None, [why]
        found = []
        for name, value in path_values.items():
            validator = operation.validators.get(("path", name))
            if validator is not None:
                found += schema_errors(validator, read_as(value, validator.schema),
                                       "path parameter %s" % name)
        query: Dict[str, List[str]] = {}
        for name, value in parse_qsl(split.query, keep_blank_values=True):
            query.setdefault(name, []).append(value)
        for name, values in query.items():
            validator = operation.validators.get(("query", name))
            if validator is None:
                found.append("query parameter %s: not in the document" % name)
                continue
            schema = validator.schema
            if schema.get("type") == "array":
                value = [read_as(v, schema.get("items", {})) for v in values]
                found += schema_errors(validator, value, "query parameter %s" % name)
            else:
                for v in values:
                    found += schema_errors(validator, read_as(v, schema),
                                           "query parameter %s" % name)
        lowered = {k.lower(): v for k, v in headers.items()}
        for (where, name), parameter in operation.parameters.items():
            present = name in query if where == "query" else \
                name in lowered if where == "header" else True
            if parameter.get("required") and not present:
                found.append("%s parameter %s: required, missing" % (where, name))
            if where == "header" and present:
                validator = operation.validators[(where, name)]
                found += schema_errors(validator, read_as(lowered[name], validator.schema),
                                       "header %s" % parameter["name"])
        found += self._request_body(operation, lowered.get("content-type"), body)
        return operation, found

    def _request_body(self, operation: Operation, content_type: Optional[str],
                      body: bytes) -> List[str]:
        if not body:
            return ["body: required, none sent"] if operation.body_required else []
        if not operation.body_media:
            return ["body: the operation takes none, %d bytes sent" % len(body)]
        media = media_type(content_type)
        validator = operation.body_media.get(media)
        if validator is None:
            return ["body: Content-Type %r is not one of %s" % (
                content_type, ", ".join(sorted(operation.body_media)))]
        if not is_json(media):
            return []
        value, why = parse_json(body)
        return ["body: %s" % why] if why else schema_errors(validator, value, "body")

    def check_answer(self, operation: Optional[Operation], method: str, status: int,
                     headers: Dict[str, str], body: bytes) -> List[str]:
        """How an answer to `operation` (None: a request no operation
        matches) breaks the contract."""
        lowered = {k.lower(): v for k, v in headers.items()}
        media = media_type(lowered.get("content-type"))
        if operation is None:
            # Nothing describes it: the only fitting answer is a problem.
            if not 400 <= status < 500 or media != "application/problem+json":
                return ["a request no operation describes was answered %d %s, not a 4xx "
                        "problem+json" % (status, media or "(no Content-Type)")]
            return self._json(self.problem, body, "answer body") if self.problem else []
        listed = operation.responses
        content = listed.get(str(status), listed.get("%dXX" % (status // 100),
                                                      listed.get("default")))
        if content is None:
            return ["status %d is not in the document (it lists %s)" % (
                status, ", ".join(sorted(listed)))]
        if method.upper() == "HEAD":
            return []
        if not body:
            return ["status %d: no body, the document gives %s" % (
                status, ", ".join(sorted(content)))] if content else []
        if not content:
            return ["status %d: the document gives no content, the answer has %d bytes (%s)" %
                    (status, len(body), media or "no Content-Type")]
        validator = content.get(media) or content.get(media.split("/")[0] + "/*") or \
            content.get("*/*")
        if validator is None:
            return ["status %d: Content-Type %r is not one of %s" % (
                status, lowered.get("content-type"), ", ".join(sorted(content)))]
        return self._json(validator, body, "answer body") if is_json(media) else []

    @staticmethod
    def _json(validator, body: bytes, where: str) -> List[str]:
        value, why = parse_json(body)
        return ["%s: %s" % (where, why)] if why else schema_errors(validator, value, where)
