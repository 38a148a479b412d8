"""A real 503: the service's PostgreSQL stopped (SIGSTOP) with --db-timeout 1.
A safe call gives up as ``Unavailable`` with the Retry-After the service
sent, or, given retries, waits out the outage honouring Retry-After; a
submit (made safe by its Idempotency-Key) is retried into one job."""

import os
import signal
import threading
import time

import tpujobs
from harness import ContractTestCase, close_all, start_module, job_spec, process_tree

service = strict = None


def setUpModule():
    global service, strict
    service, (strict,) = start_module(extra=["--db-timeout", "1"])


def tearDownModule():
    close_all(strict, service)


class StoppedDatabase:
    """SIGSTOP to the postmaster and its backends; SIGCONT on resume()."""

    def __init__(self, root: int):
        self.pids = process_tree(root)
        for pid in self.pids:
            os.kill(pid, signal.SIGSTOP)

    def resume(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.pids = []


class OutageTest(ContractTestCase):
    def test_unavailable_with_retry_after_then_a_retried_call_succeeds(self):
        client = tpujobs.Client(strict.url)
        job = client.submit(job_spec(name="before-outage", **{"trainer.max_epochs": 1}))
        job.wait(timeout=600)
        once = tpujobs.Client(strict.url, retries=1)
        hang = StoppedDatabase(service.postmaster_pid())
        try:
            self.assertGreater(len(hang.pids), 1, "the postmaster and its backends")
            with self.assertRaises(tpujobs.Unavailable) as caught:
                once.job(job.id).events()
            self.assertEqual(caught.exception.status, 503)
            self.assertEqual(caught.exception.retry_after, 1.0)
            self.assertIn("database", caught.exception.detail)

            # A client with retries honours Retry-After until the database is back.
            patient = tpujobs.Client(strict.url, retries=60)
            results = {}

            def calls():
                results["events"] = patient.job(job.id).events()
                results["submitted"] = patient.submit(job_spec(name="during-outage"),
                                                      idempotency_key="py-outage-1")

            caller = threading.Thread(target=calls)
            caller.start()
            time.sleep(3)
            self.assertTrue(caller.is_alive(), "still retrying while the database is stopped")
        finally:
            hang.resume()
        caller.join(120)
        self.assertFalse(caller.is_alive())
        self.assertEqual(results["events"][-1]["to"], "SUCCEEDED")
        submitted = results["submitted"]
        same = [j for j in client.list(name="during-outage")]
        self.assertEqual([j.id for j in same], [submitted.id], "one job however many retries")
        # Not left running. It may end between any check and the cancel: a 409
        # says it has ended; the test looks, and cancels again if it has not.
        deadline = time.monotonic() + 120
        while True:
            try:
                submitted.cancel()
                break
            except tpujobs.Conflict:
                if submitted.refresh().terminal:
                    break
                self.assertLess(time.monotonic(), deadline, "neither cancelled nor ended")
                time.sleep(0.2)
