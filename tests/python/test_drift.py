"""The client cannot drift from the API: every operation of api/openapi.json
has a client method, and the client calls no path the document lacks."""

import inspect
import json
import os
import re
import unittest

import tpujobs
import tpujobs._http as transport

SOURCE = os.environ["TPUJOBS_SOURCE_DIR"]
METHODS = ("get", "put", "post", "delete", "patch")


def documented():
    with open(os.path.join(SOURCE, "api", "openapi.json"), encoding="utf-8") as f:
        document = json.load(f)
    return {(method.upper(), path): operation.get("operationId", "")
            for path, item in document["paths"].items()
            for method, operation in item.items() if method in METHODS}


def client_sources():
    package = os.path.dirname(tpujobs.__file__)
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), encoding="utf-8") as f:
                yield name, f.read()


def missing():
    """Operations of the document no client method declares."""
    return sorted("%s %s (%s)" % (m, p, op) for (m, p), op in documented().items()
                  if (m, p) not in transport.OPERATIONS)


def extra():
    """(method, path) the client declares that the document lacks."""
    ops = documented()
    return sorted("%s %s (%s)" % (m, p, f) for (m, p), f in transport.OPERATIONS.items()
                  if (m, p) not in ops)


class DriftTest(unittest.TestCase):
    def test_every_documented_operation_has_a_client_method(self):
        self.assertEqual(missing(), [], "operations of api/openapi.json without a client method")

    def test_every_client_operation_is_documented(self):
        self.assertEqual(extra(), [], "client methods calling paths api/openapi.json lacks")

    def test_every_path_written_in_the_client_is_a_declared_operation(self):
        # A path literal anywhere in the package (a call that bypasses
        # @operation) must be one of the declared templates.
        declared = {p for (_, p) in transport.OPERATIONS}
        literal = re.compile(r'"(/(?:v1|healthz|readyz|metrics|openapi\.json)[^"\s]*)"')
        stray = []
        for name, text in client_sources():
            for path in literal.findall(text):
                if path not in declared:
                    stray.append("%s: %s" % (name, path))
        self.assertEqual(stray, [])

    def test_each_decorated_method_sends_only_its_declared_operations(self):
        # Every transport call names (method, template) in the method's body;
        # each must be one its @operation declares or another method's.
        call = re.compile(r'(?:json_call|call)\(\s*"([A-Z]+)",\s*(?:"([^"]+)"|template)')
        seen = 0
        for owner in (tpujobs.Client, tpujobs.Job):
            for name, func in inspect.getmembers(owner, inspect.isfunction):
                declared = getattr(func, "__tpujobs_operations__", None)
                if not declared:
                    continue
                for method, template in call.findall(inspect.getsource(func)):
                    if template:
                        seen += 1
                        self.assertIn((method, template), declared, "%s.%s" % (owner, name))
        self.assertGreater(seen, 20, "the pattern finds the transport calls")

    def test_the_transport_refuses_an_undeclared_path(self):
        client = tpujobs.Client("http://127.0.0.1:9")
        with self.assertRaises(AssertionError):
            client._http.call("GET", "/v1/not-in-the-client")

    def test_a_document_operation_the_client_lacks_is_caught(self):
        # The checks above are not vacuous: take one operation away...
        taken = transport.OPERATIONS.pop(("GET", "/v1/pool"))
        try:
            self.assertEqual(missing(), ["GET /v1/pool (getPool)"])
        finally:
            transport.OPERATIONS[("GET", "/v1/pool")] = taken

    def test_a_client_method_on_a_path_the_document_lacks_is_caught(self):
        # ... or declare a method on a path the document does not have.
        @transport.operation("GET", "/v1/jobs/{id}/artifacts")
        def artifacts():
            pass

        try:
            self.assertEqual(extra(), ["GET /v1/jobs/{id}/artifacts (%s)" %
                                       artifacts.__qualname__])
        finally:
            del transport.OPERATIONS[("GET", "/v1/jobs/{id}/artifacts")]


if __name__ == "__main__":
    unittest.main()
