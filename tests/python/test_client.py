"""Every call of the client against the real service, each exchange checked
against api/openapi.json by Prism (harness.ContractProxy)."""

import json
import os
import tempfile
import time
import unittest

import tpujobs
from harness import ContractProxy, ContractTestCase, close_all, job_spec, start_module

service = strict = lenient = None


def setUpModule():
    global service, strict, lenient
    service, (strict, lenient) = start_module(lenient=True)


def tearDownModule():
    close_all(strict, lenient, service)


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
        # Sent through the proxy that checks answers only: the request is wrong on purpose.
        raw = tpujobs.Client(lenient.url)._http
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
            list(tpujobs.Client(lenient.url).list(state="SLEEPING"))
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
            tpujobs.Client(lenient.url)._http.json_call(
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
            tpujobs.Client(lenient.url).set_limits("team-limits", max_queued=-1)
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
        with open(os.path.join(os.environ["TPUJOBS_SOURCE_DIR"], "api", "openapi.json")) as f:
            documented = "/v1/checks" in json.load(f)["paths"]
        with tempfile.TemporaryDirectory() as folder:
            script = os.path.join(folder, "train.py")
            with open(script, "w") as f:
                f.write("import lightning as L\n\n"
                        "trainer = L.Trainer(accelerator=\"tpu\", devices=3)\n")
            if not documented:
                # The service has no POST /v1/checks yet: ask it directly (Prism
                # would answer for a path its document lacks) for the clear error.
                with self.assertRaises(tpujobs.CheckUnavailable) as caught:
                    tpujobs.Client(service.url).check([folder])
                self.assertIn("tpujobs check", str(caught.exception))
                self.assertEqual(caught.exception.status, 404)
                return
            findings = self.client.check([folder], accelerator_type="v3-8")
        errors = [f for f in findings if f["severity"] == "error"]
        self.assertTrue(errors, findings)
        self.assertEqual((errors[0]["line"], errors[0]["path"].endswith("train.py")), (3, True))
        self.assertIn("Got 3", errors[0]["message"])


class ContractCheckTest(unittest.TestCase):
    """The contract check is not vacuous: a document the service does not
    match makes Prism refuse the answer and log the violation."""

    def test_an_answer_the_document_does_not_allow_is_caught(self):
        with open(os.path.join(os.environ["TPUJOBS_SOURCE_DIR"], "api", "openapi.json")) as f:
            document = json.load(f)
        document["components"]["schemas"]["Pool"]["required"] = ["no_such_field"]
        del document["paths"]["/v1/jobs/{id}"]["get"]["responses"]["404"]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(document, f)
        proxy = ContractProxy(service.url, document=f.name)
        try:
            client = tpujobs.Client(proxy.url)
            with self.assertRaises(tpujobs.ServerError) as caught:
                client.pool()
            self.assertEqual(caught.exception.status, 500)
            self.assertIn("no_such_field", str(caught.exception.problem))
            with self.assertRaises(tpujobs.NotFound):
                client.get(987654)
            found = proxy.violations()
            self.assertEqual(len(found), 2, found)
            self.assertIn("get /v1/pool", found[0])
            self.assertIn("VIOLATIONS", found[0])
            self.assertIn("Unable to match the returned status code", found[1])
        finally:
            proxy.close()
            os.remove(f.name)


class CheckRequestTest(unittest.TestCase):
    """What check() sends: the text of every .py file under the paths given
    (not in .git or a virtualenv), the requirements files' text, the options;
    answered here by a recording server, since the service may lack the route."""

    def test_the_files_and_options_sent_and_the_findings_read(self):
        import http.server
        import threading
        seen = {}

        class Recorder(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                seen["path"] = self.path
                seen["body"] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answer = json.dumps({"findings": [{"path": "a.py", "line": 3}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with tempfile.TemporaryDirectory() as root:
                for name in ("a.py", "pkg/b.py", "pkg/notes.txt", ".git/c.py", "venv/d.py",
                             "env2/e.py", "env2/pyvenv.cfg", "reqs.txt"):
                    os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
                    with open(os.path.join(root, name), "w") as f:
                        f.write("# %s\n" % name)
                client = tpujobs.Client("http://127.0.0.1:%d" % server.server_address[1])
                findings = client.check([root], accelerator_type="v4-8", lightning="2.1",
                                        requirements=[os.path.join(root, "reqs.txt")],
                                        python="3.10", runtime="xrt")
                sent = [os.path.relpath(f["path"], root) for f in seen["body"]["files"]]
                texts = [f["text"] for f in seen["body"]["files"]]
        finally:
            server.shutdown()
        self.assertEqual(findings, [{"path": "a.py", "line": 3}])
        self.assertEqual(seen["path"], "/v1/checks")
        self.assertEqual(sent, ["a.py", os.path.join("pkg", "b.py")])
        self.assertEqual(texts, ["# a.py\n", "# pkg/b.py\n"])
        self.assertEqual(seen["body"]["requirements"][0]["text"], "# reqs.txt\n")
        self.assertEqual((seen["body"]["accelerator_type"], seen["body"]["lightning"],
                          seen["body"]["python"], seen["body"]["runtime"]),
                         ("v4-8", "2.1", "3.10", "xrt"))


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
