"""docs/python.md's sweep-and-gate example runs exactly as written (the
Python block under "## Sweep and gate"), against the real service through
the contract proxy, with TPUJOBS_URL pointing at it."""

import os
import re
import subprocess
import sys

import tpujobs
from harness import SOURCE, ContractTestCase, close_all, start_module

service = strict = None


def setUpModule():
    global service, strict
    service, (strict,) = start_module()


def tearDownModule():
    close_all(strict, service)


def example() -> str:
    with open(os.path.join(SOURCE, "docs", "python.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Sweep and gate", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "one Python block in the section"
    return blocks[0]


class DocsExampleTest(ContractTestCase):
    def run_example(self, code: str):
        site = os.path.dirname(os.path.dirname(tpujobs.__file__))
        env = dict(os.environ, TPUJOBS_URL=strict.url, PYTHONPATH=site)
        env.pop("TPUJOBS_TOKEN", None)
        return subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=1800)

    def test_the_sweep_and_gate_example_passes_its_gate(self):
        done = self.run_example(example())
        self.assertEqual(done.returncode, 0, done.stdout)
        printed = [l for l in done.stdout.splitlines() if l.startswith("job ")]
        self.assertEqual(len(printed), 2, done.stdout)
        self.assertTrue(all(": SUCCEEDED, val_accuracy 0." in l for l in printed), done.stdout)
        client = tpujobs.Client(strict.url)
        children = [client.get(int(l.split()[1])) for l in printed]
        self.assertEqual([j.array["index"] for j in children], [0, 1])
        self.assertEqual(len({j.array["id"] for j in children}), 1)
        self.assertEqual([j.array["values"]["optimizer.lr"] for j in children], [0.01, 0.03])

    def test_the_same_example_fails_a_gate_it_cannot_pass(self):
        # The gate can fail: the same code with an unreachable bar exits 1.
        code = example().replace('{"min": 0.8}', '{"min": 1.01}')
        self.assertNotEqual(code, example())
        done = self.run_example(code)
        self.assertEqual(done.returncode, 1, done.stdout)
        self.assertEqual(done.stdout.count(": FAILED,"), 2, done.stdout)

    def test_the_same_example_stops_on_a_rejected_spec(self):
        code = example().replace("devices=1", "devices=3")
        done = self.run_example(code)
        self.assertEqual(done.returncode, 2, done.stdout)
        self.assertIn("trainer.devices: sweep child 0", done.stdout)
        self.assertIn("`devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 3", done.stdout)
