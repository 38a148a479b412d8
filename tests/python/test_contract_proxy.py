"""The e2e tests' contract check (contract_proxy.py): it forwards to the
service a request names, passes every answer on unchanged, writes a line of
its report for each violation (checked after the answer is passed on;
GET /_contract/flush waits for the checks), streams text/event-stream
straight through, and gives no answer for a service that is down."""

import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import tpujobs
from harness import DOCUMENT, close_all, free_port, job_spec, start_module

HERE = os.path.dirname(os.path.abspath(__file__))
service = None


def setUpModule():
    global service
    service, _ = start_module(contract=False)


def tearDownModule():
    close_all(service)


class Router:
    def __init__(self, document=DOCUMENT):
        self.port = free_port()
        self.report = tempfile.mkstemp(suffix=".txt")[1]
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "contract_proxy.py"), "--port", str(self.port),
             "--report", self.report, "--document", document], stdout=subprocess.PIPE, text=True)
        assert "listening" in self.process.stdout.readline()

    def send(self, path, upstream, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            connection.request("GET", path, headers=dict(headers or {},
                                                         **{"X-Tpujobs-Upstream": str(upstream)}))
            answer = connection.getresponse()
            return answer.status, answer.getheader("content-type"), answer.read()
        finally:
            connection.close()

    def violations(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        connection.request("GET", "/_contract/flush")
        assert connection.getresponse().status == 200
        connection.close()
        with open(self.report) as f:
            return f.read().splitlines()

    def close(self):
        self.process.terminate()
        self.process.wait(30)
        os.remove(self.report)


class ContractRouterTest(unittest.TestCase):
    def test_conforming_answers_pass_and_streams_go_straight_through(self):
        router = Router()
        try:
            status, kind, body = router.send("/v1/pool", service.port)
            self.assertEqual((status, kind), (200, "application/json"))
            self.assertEqual(json.loads(body)["total_cores"], 8)
            status, _, _ = router.send("/v1/jobs/987654", service.port)
            self.assertEqual(status, 404)
            job = tpujobs.Client(service.url).submit(job_spec(**{"trainer.max_epochs": 1}))
            job.wait(timeout=600)
            status, kind, body = router.send("/v1/jobs/%d/logs" % job.id, service.port,
                                             {"Accept": "text/event-stream"})
            self.assertEqual((status, kind), (200, "text/event-stream"))
            self.assertIn(b"event: end", body)
            self.assertEqual(router.violations(), [])
            with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
                router.send("/v1/pool", free_port())
        finally:
            router.close()

    def test_a_violation_is_a_line_of_the_report_and_the_answer_goes_on(self):
        with open(DOCUMENT) as f:
            document = json.load(f)
        del document["paths"]["/v1/jobs/{id}"]["get"]["responses"]["404"]
        document["components"]["schemas"]["Pool"]["required"] = ["no_such_field"]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(document, f)
        router = Router(f.name)
        try:
            status, kind, body = router.send("/v1/jobs/987654", service.port)
            self.assertEqual((status, kind), (404, "application/problem+json"))
            status, _, body = router.send("/v1/pool", service.port)
            self.assertEqual(status, 200)
            self.assertEqual(json.loads(body)["total_cores"], 8)
            # Each exchange is checked on a thread of its own: the report's
            # lines come in the order the checks end.
            found = sorted(router.violations())
            self.assertEqual(len(found), 2, found)
            self.assertTrue(found[0].startswith("GET /v1/jobs/987654 -> 404"), found)
            self.assertTrue(found[0].startswith(
                "GET /v1/jobs/987654 -> 404: getJob (GET /v1/jobs/{id}): answer: Unable to match "
                "the returned status code with those defined in the document: 200,401,429,503"),
                found[0])
            self.assertTrue(found[1].startswith("GET /v1/pool -> 200"), found)
            self.assertIn("body: Response body must have required property 'no_such_field'",
                          found[1])
        finally:
            router.close()
            os.remove(f.name)
