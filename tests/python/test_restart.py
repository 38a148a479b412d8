"""follow_logs() across a restart of the service: the stream drops, the
generator reopens it from the last sequence number, and the lines it yields
are the job's log exactly, with no gap and no line twice.

Through the contract router like the other tests: it relays the live
text/event-stream as it comes and checks each event against the document's
x-events; while the service is down it gives no answer either, as the
service would not."""

import tpujobs
from harness import ContractTestCase, close_all, start_module

service = strict = None


def setUpModule():
    global service, strict
    service, (strict,) = start_module()


def tearDownModule():
    close_all(strict, service)


def endless_job_spec():
    # Trains until the test cancels it (Lightning's max_epochs=-1); the
    # timeout only bounds it if the test dies first.
    return tpujobs.spec(
        name="followed",
        trainer=dict(accelerator="tpu", devices=1, max_epochs=-1, log_every_n_steps=5,
                     checkpoint_every_n_steps=10, seed=3),
        model=tpujobs.mlp([64], classes=4),
        data=dict(dataset=dict(synthetic="blobs", n=4000, features=16, classes=4),
                  batch_size=32),
        optimizer=dict(type="adam", lr=0.001), timeout="10m")


class FollowAcrossRestartTest(ContractTestCase):
    def test_follow_logs_resumes_after_a_restart_without_gap_or_repeat(self):
        client = tpujobs.Client(strict.url)
        job = client.submit(endless_job_spec())
        stream = job.follow_logs()
        seen = []
        for line in stream:
            seen.append(line)
            if sum("loss" in l.line for l in seen) >= 2:
                break
        self.assertEqual(job.refresh().state, "RUNNING")
        before = seen[-1].seq
        service.restart()
        for line in stream:
            seen.append(line)
            if sum("loss" in l.line for l in seen if l.seq > before) >= 2:
                break
        self.assertGreater(seen[-1].seq, before)
        job.cancel()
        seen.extend(stream)
        self.assertEqual(job.final_state, "CANCELLED")
        seqs = [l.seq for l in seen]
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)), "no gap, no repeat")
        stored = job.logs()
        self.assertEqual([(l.seq, l.line) for l in seen], [(l.seq, l.line) for l in stored])
        self.assertIn("CANCELLED", [e["to"] for e in job.events()])


if __name__ == "__main__":
    import unittest
    unittest.main()
