"""Calls about jobs that wait: the pool's only host is drained, so every job
stays QUEUED until the test acts on it (no job needs a running length)."""

import time

import tpujobs
from harness import ContractTestCase, close_all, start_module, job_spec

service = strict = None
HOST = "v3-8-h0"


def setUpModule():
    global service, strict
    service, (strict,) = start_module()
    drained = tpujobs.Client(strict.url).drain_host(HOST)
    assert drained["health"] == "draining", drained


def tearDownModule():
    close_all(strict, service)


class QueueTest(ContractTestCase):
    def setUp(self):
        self.client = tpujobs.Client(strict.url)

    def test_list_follows_the_cursor_over_several_pages(self):
        submitted = [self.client.submit(job_spec(name="page-%d" % i, labels={"suite": "pages"}))
                     for i in range(7)]
        first_page = self.client._http.json_call("GET", "/v1/jobs",
                                                 query={"label": "suite=pages", "limit": 3})
        self.assertEqual(len(first_page["jobs"]), 3)
        self.assertTrue(first_page["next_cursor"])
        listed = list(self.client.list(label={"suite": "pages"}, page_size=3))
        self.assertEqual(sorted(j.id for j in listed), sorted(j.id for j in submitted))
        self.assertEqual(len({j.id for j in listed}), 7)
        self.assertTrue(all(j.state == "QUEUED" for j in listed))
        queued = {j.id for j in self.client.list(state=["QUEUED", "RUNNING"], page_size=2)}
        self.assertTrue({j.id for j in submitted} <= queued)
        for job in submitted:
            job.cancel()

    def test_wait_times_out_with_the_last_view(self):
        job = self.client.submit(job_spec(name="waits"))
        started = time.monotonic()
        with self.assertRaises(tpujobs.Timeout) as caught:
            job.wait(timeout=2)
        elapsed = time.monotonic() - started
        self.assertGreaterEqual(elapsed, 2)
        self.assertLess(elapsed, 30)
        self.assertIsInstance(caught.exception, TimeoutError)
        self.assertEqual(caught.exception.job.state, "QUEUED")
        self.assertTrue(caught.exception.job.data.get("pending_reason"))
        with self.assertRaises(tpujobs.Timeout):
            self.client.wait(job.id, timeout=0)
        job.cancel()

    def test_cancel_a_queued_job_and_again_is_a_conflict(self):
        job = self.client.submit(job_spec(name="cancelled"))
        self.assertEqual(job.state, "QUEUED")
        job.cancel()
        self.assertEqual(job.wait(timeout=120).state, "CANCELLED")
        with self.assertRaises(tpujobs.Conflict) as caught:
            job.cancel()
        self.assertEqual(caught.exception.status, 409)
        self.assertEqual([l.line for l in job.follow_logs()], [l.line for l in job.logs()])
        self.assertEqual(job.final_state, "CANCELLED")
        with self.assertRaises(tpujobs.Conflict):
            job.xla_report()

    def test_host_fail_and_recover_then_drain_again(self):
        self.assertEqual(self.client.fail_host(HOST)["health"], "failed")
        self.assertEqual(self.client.pool()["hosts"][0]["health"], "failed")
        self.assertEqual(self.client.recover_host(HOST)["health"], "healthy")
        self.assertEqual(self.client.drain_host(HOST)["health"], "draining")
        with self.assertRaises(tpujobs.NotFound):
            self.client.fail_host("v9-1-h7")
