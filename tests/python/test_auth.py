"""Tokens: a service with tokens answers 401 without one, 403 to a tenant on
an admin operation, and 404 for another tenant's job, each as a typed
exception, and each answer as api/openapi.json documents it."""

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
                         lambda: client.submit(job_spec()), client.notification_secret):
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
                     lambda: tenant.release_lease(1)):
            with self.assertRaises(tpujobs.Forbidden) as caught:
                call()
            self.assertEqual(caught.exception.status, 403)
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
