"""Tokens: a service with tokens answers 401 without one, 403 to a tenant on
an admin operation, 404 for another tenant's job, and 429 over a tenant's
request limit, each as a typed exception, and each answer as
api/openapi.json documents it."""

import time

import tpujobs
from harness import ContractTestCase, Service, close_all, job_spec, start_module

service = strict = None
tokens = {}


def setUpModule():
    global service, strict
    service = Service(pool="v3-8")
    tokens["admin"] = service.create_token("ops", "admin")
    service, (strict,) = start_module(service=service)
    tokens["a"] = service.create_token("team-a", "user")
    tokens["b"] = service.create_token("team-b", "user")
    tpujobs.Client(strict.url, token=tokens["admin"]).drain_host("v3-8-h0")


def tearDownModule():
    close_all(strict, service)


class AuthTest(ContractTestCase):
    def test_no_token_and_an_unknown_token_are_unauthorized(self):
        for token in (None, "not-a-token"):
            client = tpujobs.Client(strict.url, token=token)
            for call in (client.pool, lambda: client.get(1), lambda: list(client.list()),
                         lambda: client.submit(job_spec()), client.notification_secret,
                         lambda: client.limits("team-a"), lambda: client.check([]),
                         lambda: client.set_limits("team-a", max_queued=5)):
                with self.assertRaises(tpujobs.Unauthorized) as caught:
                    call()
                self.assertEqual(caught.exception.status, 401)
                self.assertIn("token create", caught.exception.hint)
        self.assertEqual(tpujobs.Client(strict.url).health()["status"], "ok")

    def test_admin_operations_need_an_admin_token(self):
        tenant = tpujobs.Client(strict.url, token=tokens["a"])
        for call in (lambda: tenant.drain_host("v3-8-h0"), lambda: tenant.recover_host("v3-8-h0"),
                     lambda: tenant.set_quota("team-a", 100),
                     lambda: tenant.set_notification_allowlist(["example.com"]),
                     lambda: tenant.release_lease(1),
                     lambda: tenant.set_limits("team-a", max_queued=5),
                     lambda: tenant.limits("team-b")):
            with self.assertRaises(tpujobs.Forbidden) as caught:
                call()
            self.assertEqual(caught.exception.status, 403)
        self.assertIn("max_queued", tenant.limits("team-a"))  # its own
        admin = tpujobs.Client(strict.url, token=tokens["admin"])
        self.assertEqual(admin.set_quota("team-a", 8)["max_cores"], 8)
        self.assertEqual(admin.drain_host("v3-8-h0")["health"], "draining")

    def test_another_tenants_job_is_not_found(self):
        a = tpujobs.Client(strict.url, token=tokens["a"])
        b = tpujobs.Client(strict.url, token=tokens["b"])
        job = a.submit(job_spec(name="mine"))
        self.assertEqual(a.get(job.id).state, "QUEUED")
        with self.assertRaises(tpujobs.NotFound):
            b.get(job.id)
        with self.assertRaises(tpujobs.NotFound):
            b.cancel(job.id)
        self.assertNotIn(job.id, [j.id for j in b.list()])
        self.assertIn(job.id, [j.id for j in a.list()])
        job.cancel()

    def test_the_token_as_access_token_in_the_query_is_documented(self):
        # What a browser's EventSource sends; the router fails the test if
        # the document did not allow the parameter the service takes.
        import http.client
        import json
        host, port = strict.url[len("http://"):].rsplit(":", 1)
        answers = {}
        for name, token in (("valid", tokens["a"]), ("unknown", "tpj_not-a-token")):
            connection = http.client.HTTPConnection(host, int(port), timeout=60)
            connection.request("GET", "/v1/jobs?limit=1&access_token=" + token)
            answer = connection.getresponse()
            answers[name] = (answer.status, json.loads(answer.read()))
            connection.close()
        self.assertEqual(answers["valid"][0], 200, answers)
        self.assertIn("jobs", answers["valid"][1])
        self.assertEqual(answers["unknown"][0], 401, answers)

    def test_over_the_request_limit_is_too_many_requests_and_safe_calls_wait_it_out(self):
        admin = tpujobs.Client(strict.url, token=tokens["admin"])
        admin.set_limits("team-b", requests_per_second=0.5, request_burst=1)
        once = tpujobs.Client(strict.url, token=tokens["b"], retries=1)
        try:
            refused = None
            deadline = time.monotonic() + 60
            while refused is None and time.monotonic() < deadline:
                try:
                    once.pool()
                except tpujobs.TooManyRequests as e:
                    refused = e
            self.assertIsNotNone(refused, "no 429 within 60 s at 0.5 requests a second")
            self.assertEqual(refused.status, 429)
            self.assertEqual(refused.problem["limit"], "requests_per_second")
            self.assertGreaterEqual(refused.retry_after, 1)
            # Given retries, a safe call sleeps the Retry-After and gets its answer.
            patient = tpujobs.Client(strict.url, token=tokens["b"], retries=10)
            self.assertEqual(patient.pool()["total_cores"], 8)
            self.assertEqual(patient.pool()["total_cores"], 8)
        finally:
            admin.set_limits("team-b", requests_per_second=None, request_burst=None)
