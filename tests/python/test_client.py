"""Every call of the client against the real service, each exchange checked
against api/openapi.json by the contract router (harness.ContractProxy:
Prism's validator behind a byte-for-byte relay)."""

import json
import os
import tempfile
import time
import unittest

import tpujobs
from harness import ContractProxy, ContractTestCase, close_all, job_spec, start_module

service = strict = None


def setUpModule():
    global service, strict
    service, (strict,) = start_module()


def tearDownModule():
    close_all(strict, service)


class JobCallsTest(ContractTestCase):
    def setUp(self):
        self.client = tpujobs.Client(strict.url)

    def test_a_job_from_submit_to_its_report(self):
        job = self.client.submit(job_spec(name="calls", labels={"suite": "calls"}))
        self.assertIn(job.state, ("QUEUED", "STARTING", "RUNNING"))
        self.assertEqual(job.wait(timeout=600).state, "SUCCEEDED", job.data)
        self.assertTrue(job.terminal and job.succeeded)
        self.assertEqual(self.client.get(job.id).data["id"], job.id)
        self.assertEqual(job.refresh().state, "SUCCEEDED")

        lines = job.logs()
        self.assertEqual([l.seq for l in lines], list(range(1, len(lines) + 1)))
        self.assertIn("TPU available: True, using: 1 TPU cores", [l.line for l in lines])
        self.assertEqual(job.logs(after=lines[-2].seq), lines[-1:])
        followed = list(job.follow_logs())
        self.assertEqual([(l.seq, l.line) for l in followed], [(l.seq, l.line) for l in lines])
        self.assertEqual(job.final_state, "SUCCEEDED")

        points = job.metrics()
        self.assertTrue(points)
        self.assertIn("loss", points[0]["values"])
        self.assertEqual(job.metrics(after=points[-1]["seq"]), [])
        events = job.events()
        self.assertEqual(events[0]["to"], "QUEUED")
        self.assertEqual(events[-1]["to"], "SUCCEEDED")
        self.assertIn("Counter: UncachedCompile", job.xla_report())
        self.assertEqual(job.notifications(), [])
        self.assertEqual([j.id for j in self.client.list(label={"suite": "calls"})], [job.id])
        self.assertEqual([j.id for j in self.client.list(name="calls", state="SUCCEEDED")],
                         [job.id])

    def test_the_same_idempotency_key_gives_the_same_job_and_another_body_a_conflict(self):
        spec = job_spec(name="idempotent", **{"trainer.max_epochs": 1})
        first = self.client.submit(spec, idempotency_key="py-idem-1")
        again = self.client.submit(spec, idempotency_key="py-idem-1")
        self.assertEqual(again.id, first.id)
        with self.assertRaises(tpujobs.Conflict) as caught:
            self.client.submit(job_spec(name="other"), idempotency_key="py-idem-1")
        self.assertEqual(caught.exception.status, 409)
        first.wait(timeout=600)

    def test_validate_and_the_misconfigured_spec_refused_field_by_field(self):
        answer = self.client.validate(job_spec())
        self.assertTrue(answer["valid"])
        self.assertEqual(answer["resolved"]["cores"], 1)
        bad = job_spec(**{"trainer.devices": 3, "trainer.strategy": "ddp"})
        for call in (self.client.validate, self.client.submit):
            with self.assertRaises(tpujobs.SpecRejected) as caught:
                call(bad)
            errors = {e.field: e for e in caught.exception.errors}
            self.assertEqual(errors["trainer.devices"].message,
                             "`devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 3")
            self.assertTrue(errors["trainer.devices"].hint)
            self.assertIn("trainer.strategy", errors)
            self.assertEqual(caught.exception.status, 422)

    def test_the_spec_builder_writes_what_the_service_takes(self):
        spec = tpujobs.spec(
            trainer=dict(accelerator="tpu", devices=8, precision="bf16-true", max_epochs=3),
            model=[tpujobs.linear(32), tpujobs.gelu(), tpujobs.dropout(0.1), tpujobs.linear(10)],
            data="digits", optimizer=dict(type="sgd", lr=0.1, momentum=0.9),
            expect={"val_accuracy": {"min": 0.5}}, labels={"team": "py"}, timeout="10m")
        self.assertEqual(spec["model"]["loss"], "cross_entropy")
        self.assertEqual(spec["data"], {"dataset": "digits"})
        answer = self.client.validate(spec)
        self.assertTrue(answer["valid"], answer)
        self.assertEqual(answer["resolved"]["cores"], 8)
        self.assertEqual(answer["resolved"]["precision"], "bf16-true")

    def test_a_missing_job_or_host_is_not_found(self):
        with self.assertRaises(tpujobs.NotFound) as caught:
            self.client.get(987654)
        self.assertEqual(caught.exception.detail, "no job 987654")
        for call in (lambda: self.client.cancel(987654),
                     lambda: self.client.job(987654).logs(),
                     lambda: self.client.job(987654).events(),
                     lambda: self.client.drain_host("no-such-host")):
            with self.assertRaises(tpujobs.NotFound):
                call()

    def test_malformed_requests_are_bad_requests(self):
        # Wrong on purpose: the router lets a request outside the document
        # pass when the service refuses it with a 4xx problem+json it lists.
        raw = tpujobs.Client(strict.url)._http
        with self.assertRaises(tpujobs.BadRequest) as caught:
            raw.call("POST", "/v1/jobs", body=b"{not json", content_type="application/json")
        self.assertEqual(caught.exception.status, 400)
        with self.assertRaises(tpujobs.BadRequest) as caught:
            raw.call("POST", "/v1/jobs", body=b"{}", content_type="text/plain")
        self.assertEqual(caught.exception.status, 415)
        with self.assertRaises(tpujobs.BadRequest):
            raw.call("GET", "/v1/jobs/{id}/wait", path_params={"id": 1},
                     query={"timeout": 301})
        with self.assertRaises(tpujobs.BadRequest) as caught:
            list(tpujobs.Client(strict.url).list(state="SLEEPING"))
        self.assertIn("SLEEPING", caught.exception.detail)


class ServiceCallsTest(ContractTestCase):
    def setUp(self):
        self.client = tpujobs.Client(strict.url)

    def test_health_readiness_metrics_and_the_document(self):
        self.assertEqual(self.client.health().get("status"), "ok")
        self.assertTrue(self.client.ready())
        self.assertIn("tpujobs_", self.client.prometheus_metrics())
        self.assertEqual(self.client.openapi()["openapi"], "3.1.0")

    def test_pool_usage_and_quota(self):
        pool = self.client.pool()
        self.assertEqual(pool["total_cores"], 8)
        self.assertEqual([h["name"] for h in pool["hosts"]], ["v3-8-h0"])
        usage = self.client.usage(from_="24h", group_by="tenant")
        self.assertIn("total_core_seconds", usage)
        csv = self.client.usage(from_="24h", csv=True)
        self.assertTrue(csv.startswith("group,generation,jobs,core_seconds"), csv)
        self.client.set_quota("team-py", 4)
        with self.assertRaises(tpujobs.SpecRejected):
            tpujobs.Client(strict.url)._http.json_call(
                "POST", "/v1/tenants/{tenant}/quota", {"max_cores": -1},
                path_params={"tenant": "team-py"})
        self.client.set_quota("team-py", None)

    def test_limits_are_read_and_set_and_a_bad_one_is_refused(self):
        before = self.client.limits("team-limits")
        self.assertIn("max_queued", before)
        now = self.client.set_limits("team-limits", max_queued=7)
        self.assertEqual(7, now["max_queued"])
        self.assertEqual(7, self.client.limits("team-limits")["max_queued"])
        with self.assertRaises(tpujobs.SpecRejected):  # not a request the document allows
            tpujobs.Client(strict.url).set_limits("team-limits", max_queued=-1)
        back = self.client.set_limits("team-limits", max_queued=None)
        self.assertEqual(before["max_queued"], back["max_queued"])

    def test_upload_a_dataset_and_train_on_it(self):
        rows = ["f1,f2,label"] + ["%d,%d,%d" % (i % 7, (i * 3) % 5, i % 2) for i in range(60)]
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("\n".join(rows) + "\n")
        try:
            uploaded = self.client.upload_dataset(f.name, name="py-data",
                                                  idempotency_key="py-ds-1")
            again = self.client.upload_dataset(f.name, name="py-data",
                                               idempotency_key="py-ds-1")
        finally:
            os.remove(f.name)
        self.assertEqual(uploaded["rows"], 60)
        self.assertEqual(uploaded["features"], 2)
        self.assertEqual(again["id"], uploaded["id"])
        spec = job_spec(name="on-upload", **{"data.dataset": {"upload": uploaded["id"]},
                                             "model.layers": tpujobs.mlp([8], 2)["layers"]})
        self.assertTrue(self.client.validate(spec)["valid"])

    def test_notification_secret_and_allowlist(self):
        self.assertIn("exists", self.client.notification_secret())
        rotated = self.client.rotate_notification_secret()
        self.assertTrue(rotated["secret"])
        self.assertTrue(self.client.notification_secret()["exists"])
        self.assertEqual(self.client.set_notification_allowlist(["127.0.0.1:9"]), ["127.0.0.1:9"])
        self.assertEqual(self.client.notification_allowlist(), ["127.0.0.1:9"])
        self.assertEqual(self.client.set_notification_allowlist([]), [])

    def test_release_lease_of_a_job_that_holds_none(self):
        job = self.client.submit(job_spec(name="lease", **{"trainer.max_epochs": 1}))
        job.wait(timeout=600)
        try:
            answer = self.client.release_lease(job.id)
            self.assertIsInstance(answer, dict)
        except tpujobs.NotFound as e:
            self.assertEqual(e.status, 404)
        with self.assertRaises(tpujobs.NotFound):
            self.client.release_lease(987654)

    def test_the_script_check(self):
        with tempfile.TemporaryDirectory() as folder:
            script = os.path.join(folder, "train.py")
            with open(script, "w") as f:
                f.write("import lightning as L\n\n"
                        "trainer = L.Trainer(accelerator=\"tpu\", devices=3)\n")
            findings = self.client.check([folder], accelerator_type="v3-8")
            errors = [f for f in findings if f["severity"] == "error"]
            self.assertTrue(errors, findings)
            self.assertEqual((errors[0]["line"], errors[0]["path"]), (3, script))
            self.assertIn("Got 3", errors[0]["message"])
            with self.assertRaises(tpujobs.SpecRejected) as caught:
                self.client.check([folder], lightning="0.1")
            self.assertEqual([e.field for e in caught.exception.errors], ["lightning"])


class ContractCheckTest(unittest.TestCase):
    """The contract check is not vacuous: against a document the service does
    not match, the router passes the service's real answer on, marked, and
    reports the violation."""

    def test_an_answer_the_document_does_not_allow_is_caught(self):
        with open(os.path.join(os.environ["TPUJOBS_SOURCE_DIR"], "api", "openapi.json")) as f:
            document = json.load(f)
        document["components"]["schemas"]["Pool"]["required"] = ["no_such_field"]
        del document["paths"]["/v1/jobs/{id}"]["get"]["responses"]["404"]
        document["paths"]["/v1/usage"]["get"]["responses"]["200"]["content"].pop("text/csv")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(document, f)
        proxy = ContractProxy(service.url, document=f.name)
        try:
            client = tpujobs.Client(proxy.url)
            self.assertEqual(client.pool()["total_cores"], 8)
            with self.assertRaises(tpujobs.NotFound):
                client.get(987654)
            self.assertTrue(client.usage(from_="24h", csv=True).startswith("group,"))
            # In the order the checks end (each exchange is checked on a
            # thread of its own), not the order of the requests.
            found = proxy.violations()
            self.assertEqual(len(found), 4, found)
            for expected in (
                    "GET /v1/pool -> 200: getPool (GET /v1/pool): answer: body: Response "
                    "body must have required property 'no_such_field'",
                    "GET /v1/jobs/987654 -> 404: getJob (GET /v1/jobs/{id}): answer: "
                    "Unable to match the returned status code",
                    "GET /v1/usage?from=24h&format=csv -> 200: getUsage (GET /v1/usage): "
                    "answer: The received media type \"text/csv",
                    "answer: body: Response body must be object"):
                self.assertTrue(any(expected in violation for violation in found),
                                (expected, found))
            self.assertEqual(client.pool()["total_cores"], 8)
            self.assertEqual(len(proxy.violations()), 1, "read once, then only new ones")
        finally:
            proxy.close()
            os.remove(f.name)


def stub_service(test, status, answer, headers=(), retries=5):
    """A stand-in service on a free loopback port that answers every request
    with ``status`` and the JSON ``answer`` (problem+json for a status of 400
    and more) and ``headers``, stopped at the test's end. Returns a Client of
    it and the list of requests seen: (method, path, body, when)."""
    import http.server
    import threading
    seen = []

    class Stub(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append((self.command, self.path, body, time.monotonic()))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/problem+json" if status >= 400
                             else "application/json")
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    test.addCleanup(server.server_close)
    test.addCleanup(server.shutdown)
    return tpujobs.Client("http://127.0.0.1:%d" % server.server_address[1], retries=retries), seen


class CheckRequestTest(unittest.TestCase):
    """What check() sends: the text of every .py file under the paths given
    (not in .git or a virtualenv), the requirements files' text, the options;
    answered here by a stand-in that records the request."""

    def test_the_files_and_options_sent_and_the_findings_read(self):
        client, seen = stub_service(self, 200, {"findings": [{"path": "a.py", "line": 3}]})
        with tempfile.TemporaryDirectory() as root:
            for name in ("a.py", "pkg/b.py", "pkg/notes.txt", ".git/c.py", "venv/d.py",
                         "env2/e.py", "env2/pyvenv.cfg", "reqs.txt"):
                os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
                with open(os.path.join(root, name), "w") as f:
                    f.write("# %s\n" % name)
            findings = client.check([root], accelerator_type="v4-8", lightning="2.1",
                                    requirements=[os.path.join(root, "reqs.txt")],
                                    python="3.10", runtime="xrt")
            body = json.loads(seen[0][2])
            sent = [os.path.relpath(f["path"], root) for f in body["files"]]
            texts = [f["text"] for f in body["files"]]
        self.assertEqual(findings, [{"path": "a.py", "line": 3}])
        self.assertEqual(seen[0][:2], ("POST", "/v1/checks"))
        self.assertEqual(sent, ["a.py", os.path.join("pkg", "b.py")])
        self.assertEqual(texts, ["# a.py\n", "# pkg/b.py\n"])
        self.assertEqual(body["requirements"][0]["text"], "# reqs.txt\n")
        self.assertEqual((body["accelerator_type"], body["lightning"], body["python"],
                          body["runtime"]), ("v4-8", "2.1", "3.10", "xrt"))


class OlderServiceTest(unittest.TestCase):
    """check() on a service older than the script check: its POST /v1/checks
    is a 404 "no route" problem, which check() turns into CheckUnavailable."""

    def test_a_service_without_the_check_gives_check_unavailable(self):
        client, _ = stub_service(self, 404, {"title": "Not Found", "status": 404,
                                             "detail": "no route for POST /v1/checks"})
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "train.py"), "w") as f:
                f.write("import lightning\n")
            with self.assertRaises(tpujobs.CheckUnavailable) as caught:
                client.check([folder])
        self.assertIsInstance(caught.exception, tpujobs.NotFound)
        self.assertEqual(caught.exception.status, 404)
        self.assertIn("run `tpujobs check` locally", str(caught.exception))


class RetryRulesTest(unittest.TestCase):
    """Which calls are repeated after a 503 or 429 with Retry-After, counted
    on a stand-in that answers every request so: a safe call is tried
    ``retries`` times, sleeping the Retry-After between; a cancel, a lease
    release or a secret rotation (not safe to repeat) is sent once."""

    def busy(self, status):
        return stub_service(self, status, {"title": "busy", "status": status, "detail": "busy"},
                            [("Retry-After", "1")], retries=3)

    def test_a_safe_call_is_retried_honouring_retry_after(self):
        for status, error in ((503, tpujobs.Unavailable), (429, tpujobs.TooManyRequests)):
            client, seen = self.busy(status)
            with self.assertRaises(error) as caught:
                client.pool()
            self.assertEqual(caught.exception.retry_after, 1.0)
            self.assertEqual(len(seen), 3, seen)
            gaps = [b[3] - a[3] for a, b in zip(seen, seen[1:])]
            self.assertTrue(all(gap >= 0.95 for gap in gaps), gaps)

    def test_a_call_not_safe_to_repeat_is_sent_once(self):
        client, seen = self.busy(503)
        for call in (lambda: client.job(7).cancel(), lambda: client.release_lease(7),
                     client.rotate_notification_secret):
            with self.assertRaises(tpujobs.Unavailable):
                call()
        self.assertEqual([(m, p) for m, p, _, _ in seen],
                         [("POST", "/v1/jobs/7/cancel"), ("POST", "/v1/pool/leases/7:release"),
                          ("POST", "/v1/notifications/secret")])


class EnvironmentTest(unittest.TestCase):
    def test_url_and_token_come_from_the_environment_as_for_the_cli(self):
        saved = {k: os.environ.get(k) for k in ("TPUJOBS_URL", "TPUJOBS_TOKEN")}
        try:
            os.environ["TPUJOBS_URL"] = "http://127.0.0.1:1234"
            os.environ["TPUJOBS_TOKEN"] = "secret-token"
            client = tpujobs.Client()
            self.assertEqual(client.url, "http://127.0.0.1:1234")
            self.assertEqual(client._http.token, "secret-token")
            del os.environ["TPUJOBS_URL"], os.environ["TPUJOBS_TOKEN"]
            self.assertEqual(tpujobs.Client().url, "http://127.0.0.1:8080")
        finally:
            for k, v in saved.items():
                if v is not None:
                    os.environ[k] = v

    def test_no_service_is_unavailable(self):
        start = time.monotonic()
        with self.assertRaises(tpujobs.Unavailable) as caught:
            tpujobs.Client("http://127.0.0.1:%d" % 9, retries=2).pool()
        self.assertEqual(caught.exception.status, 0)
        self.assertLess(time.monotonic() - start, 30)


if __name__ == "__main__":
    unittest.main()
