"""The CTest fixture contract_proxy_start / contract_proxy_stop
(contract_fixture.py), as ctest runs it, around a real service: clean
exchanges let the stop succeed, and so does bad input the service refuses
with a 4xx problem+json the document lists; a request the document does not
allow that the service accepts, or an answer or event against a
deliberately wrong copy of api/openapi.json, makes the stop fail and print
the operation and field; a router that died before the stop fails it too.

Its own ctest entry (python_contract_fixture), not part of the e2e run,
and not found by python_client's discovery (test_*.py)."""

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import tpujobs
from harness import DOCUMENT, close_all, job_spec, start_module

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "contract_fixture.py")


def fixture(action, directory, *extra):
    done = subprocess.run([sys.executable, FIXTURE, action, directory, *extra],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300)
    return done.returncode, done.stdout


def through_router(directory, path, service, method="GET", body=None, headers=None):
    """`method` `path` to the service the way tests/e2e/http_client.cc does:
    (status, body, whether the router added or changed a header: it must not)."""
    with open(os.path.join(directory, "address"), encoding="utf-8") as f:
        host, port = f.read().strip().rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request(method, path, body=body,
                           headers=dict(headers or {}, **{"X-Tpujobs-Upstream": str(service.port)}))
        answer = connection.getresponse()
        return answer.status, answer.read(), any(
            k.lower().startswith("x-tpujobs-contract") for k, _ in answer.getheaders())
    finally:
        connection.close()


def stream_through_router(directory, path, service):
    """A text/event-stream GET through the router; the whole stream."""
    with open(os.path.join(directory, "address"), encoding="utf-8") as f:
        host, port = f.read().strip().rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request("GET", path, headers={"X-Tpujobs-Upstream": str(service.port),
                                                 "Accept": "text/event-stream"})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class ContractFixtureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.service = start_module(contract=False)[0]
        cls.addClassCleanup(close_all, cls.service)

    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="tpujobs-contract-fixture-")
        self.addCleanup(shutil.rmtree, self.directory, True)

    def pid(self):
        with open(os.path.join(self.directory, "pid"), encoding="utf-8") as f:
            return int(f.read())

    def start_with_wrong_document(self, schema, change):
        """The fixture started on a copy of api/openapi.json whose schema
        `schema` was changed by `change`; the fixture's directory."""
        with open(DOCUMENT, encoding="utf-8") as f:
            document = json.load(f)
        change(document["components"]["schemas"][schema])
        wrong = os.path.join(self.directory, "wrong-openapi.json")
        with open(wrong, "w", encoding="utf-8") as f:
            json.dump(document, f)
        run = os.path.join(self.directory, "run")
        code, out = fixture("start", run, "--document", wrong)
        self.assertEqual(code, 0, out)
        return run

    def test_conforming_answers_let_the_stop_pass(self):
        code, out = fixture("start", self.directory)
        self.assertEqual(code, 0, out)
        pid = self.pid()
        self.assertEqual(through_router(self.directory, "/v1/pool", self.service)[0], 200)
        self.assertEqual(through_router(self.directory, "/v1/jobs/987654", self.service)[0], 404)
        code, out = fixture("stop", self.directory)
        self.assertEqual(code, 0, out)
        self.assertIn("2 answers checked, 0 violations", out)
        self.assertFalse(alive(pid))

    def test_a_wrong_document_makes_the_stop_fail_and_name_the_answer(self):
        # The service answers an integer; this copy wants a string.
        run = self.start_with_wrong_document(
            "Pool", lambda pool: pool["properties"].update(total_cores={"type": "string"}))
        status, body, violation = through_router(run, "/v1/pool", self.service)
        # The answer goes on unchanged; the stop fails.
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["total_cores"], 8)
        self.assertFalse(violation)
        code, out = fixture("stop", run)
        self.assertEqual(code, 1, out)
        self.assertIn("1 answers checked, 1 violations", out)
        self.assertIn("1 exchanges broke api/openapi.json:", out)
        self.assertIn("GET /v1/pool -> 200: getPool (GET /v1/pool): answer: body.total_cores: "
                      "Response body property total_cores must be string", out)

    def test_a_request_the_document_does_not_allow_makes_the_stop_fail(self):
        code, out = fixture("start", self.directory)
        self.assertEqual(code, 0, out)
        # A query parameter the document lacks, which the service ignores.
        status, _, violation = through_router(self.directory, "/v1/pool?verbose=1",
                                              self.service)
        self.assertEqual(status, 200)
        self.assertFalse(violation)
        code, out = fixture("stop", self.directory)
        self.assertEqual(code, 1, out)
        self.assertIn("1 answers checked, 1 violations", out)
        self.assertIn("GET /v1/pool?verbose=1 -> 200: getPool (GET /v1/pool): a request the "
                      "document does not allow, accepted: query.verbose: not a parameter of the "
                      "operation", out)

    def test_a_request_body_against_its_schema_makes_the_stop_fail(self):
        # The service takes the name "too-long"; this copy allows 3 characters.
        run = self.start_with_wrong_document(
            "JobSpec", lambda spec: spec["properties"]["name"].update(maxLength=3))
        status, body, violation = through_router(
            run, "/v1/jobs:validate", self.service, "POST",
            json.dumps(job_spec(name="too-long")).encode(),
            {"Content-Type": "application/json"})
        self.assertEqual(status, 200, body)
        self.assertFalse(violation)
        code, out = fixture("stop", run)
        self.assertEqual(code, 1, out)
        self.assertIn("POST /v1/jobs:validate -> 200: validateJob (POST /v1/jobs:validate): a "
                      "request the document does not allow, accepted: body.name: Request body "
                      "property name must NOT have more than 3 characters", out)

    def test_bad_input_refused_with_a_listed_problem_passes(self):
        code, out = fixture("start", self.directory)
        self.assertEqual(code, 0, out)
        # Outside the document on purpose, refused with a 4xx problem+json
        # the document lists: not a violation.
        self.assertEqual(through_router(self.directory, "/v1/jobs/abc", self.service)[0], 404)
        self.assertEqual(through_router(self.directory, "/v1/jobs?limit=0", self.service)[0],
                         400)
        status, _, _ = through_router(self.directory, "/v1/jobs", self.service, "POST",
                                      b'{"trainer": {"devices": "eight"}}',
                                      {"Content-Type": "application/json"})
        self.assertEqual(status, 422)
        # Deeper than Python's parser goes (it once cost the test its answer);
        # Node's parser reads it through, to its unclosed end.
        status, _, _ = through_router(self.directory, "/v1/jobs", self.service, "POST",
                                      b"[" * 100000, {"Content-Type": "application/json"})
        self.assertEqual(status, 400)
        code, out = fixture("stop", self.directory)
        self.assertEqual(code, 0, out)
        self.assertIn("4 answers checked, 0 violations; 0 stream events checked; 4 requests "
                      "outside the document refused with a 4xx", out)
        self.assertIn("refused, as it should be: POST /v1/jobs -> 400: submitJob (POST /v1/jobs)"
                      ": body: not JSON (Unexpected end of JSON input)", out)
        self.assertIn("refused, as it should be: GET /v1/jobs?limit=0 -> 400: listJobs (GET "
                      "/v1/jobs): query.limit: Request query parameter limit must be >= 1", out)

    def finished_job(self):
        job = tpujobs.Client(self.service.url).submit(job_spec(name="stream-contract"))
        job.wait(timeout=600)
        self.assertEqual(job.state, "SUCCEEDED")
        return job.id

    def test_a_stream_is_checked_event_by_event(self):
        job = self.finished_job()
        code, out = fixture("start", self.directory)
        self.assertEqual(code, 0, out)
        status, body = stream_through_router(self.directory, "/v1/jobs/%d/logs" % job,
                                             self.service)
        self.assertEqual(status, 200)
        self.assertIn(b"event: end", body)
        code, out = fixture("stop", self.directory)
        self.assertEqual(code, 0, out)
        lines = body.count(b"event: log")
        self.assertGreater(lines, 0)
        self.assertIn("1 answers checked, 0 violations; %d stream events checked" % (lines + 1),
                      out)

    def test_an_event_that_breaks_its_schema_makes_the_stop_fail(self):
        job = self.finished_job()
        # The service sends `seq` as an integer; this copy wants a string.
        run = self.start_with_wrong_document(
            "LogEvent", lambda event: event["properties"].update(seq={"type": "string"}))
        status, body = stream_through_router(run, "/v1/jobs/%d/logs" % job, self.service)
        self.assertEqual(status, 200)
        code, out = fixture("stop", run)
        self.assertEqual(code, 1, out)
        self.assertIn("GET /v1/jobs/%d/logs -> 200: jobLogs (GET /v1/jobs/{id}/logs): event "
                      "'log': /seq: must be string: {" % job, out)

    def test_a_router_that_died_before_the_stop_fails_it(self):
        code, out = fixture("start", self.directory)
        self.assertEqual(code, 0, out)
        pid = self.pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        code, out = fixture("stop", self.directory)
        self.assertEqual(code, 1, out)
        self.assertIn("had already exited", out)

    def test_stop_without_start_fails(self):
        code, out = fixture("stop", self.directory)
        self.assertEqual(code, 1, out)
        self.assertIn("was not started", out)


if __name__ == "__main__":
    unittest.main()
