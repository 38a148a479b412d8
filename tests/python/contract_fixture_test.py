"""The CTest fixture contract_proxy_start / contract_proxy_stop
(contract_fixture.py), as ctest runs it, around a real service: clean
answers let the stop succeed; against a deliberately wrong copy of
api/openapi.json the same answers make the stop fail and print the
violation; a router that died before the stop fails it too.

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


def through_router(directory, path, service):
    """GET `path` from the service the way tests/e2e/http_client.cc does."""
    with open(os.path.join(directory, "address"), encoding="utf-8") as f:
        host, port = f.read().strip().rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request("GET", path, headers={"X-Tpujobs-Upstream": str(service.port)})
        answer = connection.getresponse()
        return answer.status, answer.read()
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
        with open(DOCUMENT, encoding="utf-8") as f:
            document = json.load(f)
        # The service answers an integer; this copy wants a string.
        document["components"]["schemas"]["Pool"]["properties"]["total_cores"] = {
            "type": "string"}
        wrong = os.path.join(self.directory, "wrong-openapi.json")
        with open(wrong, "w", encoding="utf-8") as f:
            json.dump(document, f)
        code, out = fixture("start", os.path.join(self.directory, "run"), "--document", wrong)
        self.assertEqual(code, 0, out)
        status, body = through_router(os.path.join(self.directory, "run"), "/v1/pool",
                                      self.service)
        self.assertEqual(status, 500)
        self.assertIn(b"Contract violation", body)
        code, out = fixture("stop", os.path.join(self.directory, "run"))
        self.assertEqual(code, 1, out)
        self.assertIn("1 answers checked, 1 violations", out)
        self.assertIn("1 answers broke api/openapi.json:", out)
        self.assertIn("GET /v1/pool -> 500", out)
        self.assertIn("total_cores", out)

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
        with open(DOCUMENT, encoding="utf-8") as f:
            document = json.load(f)
        # The service sends `seq` as an integer; this copy wants a string.
        document["components"]["schemas"]["LogEvent"]["properties"]["seq"] = {"type": "string"}
        wrong = os.path.join(self.directory, "wrong-openapi.json")
        with open(wrong, "w", encoding="utf-8") as f:
            json.dump(document, f)
        run = os.path.join(self.directory, "run")
        code, out = fixture("start", run, "--document", wrong)
        self.assertEqual(code, 0, out)
        status, body = stream_through_router(run, "/v1/jobs/%d/logs" % job, self.service)
        self.assertEqual(status, 200)
        code, out = fixture("stop", run)
        self.assertEqual(code, 1, out)
        self.assertIn("GET /v1/jobs/%d/logs -> 200: event 'log': seq: " % job, out)
        self.assertIn("is not of type 'string'", out)

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
