"""The package works on Python 3.9, its oldest supported version: installed
by 3.9's own pip offline (its setuptools, no build isolation, no network),
every module imported (an annotation such as `int | None` or a `match`
statement fails here), and real calls made against the service through the
contract router, including typed errors; the drift test runs under 3.9 too.

3.9 is found as $TPUJOBS_PYTHON39, `python3.9` on PATH, or pyenv's
~/.pyenv/versions/3.9.*; without one the run-time part is skipped (the
syntax check still runs, with the grammar of 3.9)."""

import ast
import glob
import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

import tpujobs
from harness import SOURCE, ContractTestCase, close_all, start_module

service = strict = None

SCRIPT = textwrap.dedent("""
    import json, sys, unittest
    import tpujobs, tpujobs._http, tpujobs.client, tpujobs.errors, tpujobs.job, tpujobs.spec
    assert sys.version_info[:2] == (3, 9), sys.version
    assert tpujobs.__file__.startswith(sys.argv[2]), tpujobs.__file__
    client = tpujobs.Client(sys.argv[1])
    spec = tpujobs.spec(
        name="py39", trainer=dict(accelerator="tpu", devices=1, max_epochs=1),
        model=tpujobs.mlp([8], classes=3), data=dict(dataset="iris", batch_size=16))
    out = {"valid": client.validate(spec)["valid"], "cores": client.pool()["total_cores"]}
    try:
        client.validate(tpujobs.with_values(spec, **{"trainer.devices": 3}))
    except tpujobs.SpecRejected as e:
        out["rejected"] = [x.field for x in e.errors]
    try:
        client.get(987654)
    except tpujobs.NotFound as e:
        out["missing"] = e.status
    job = client.submit(tpujobs.with_values(spec, **{"trainer.devices": 1}))
    out["state"] = job.wait(timeout=600).state
    out["logs"] = len(list(job.follow_logs())) == len(job.logs())
    out["listed"] = [j.id for j in client.list(name="py39")] == [job.id]
    drift = unittest.TestLoader().loadTestsFromName("test_drift")
    out["drift"] = unittest.TextTestRunner(verbosity=0).run(drift).wasSuccessful()
    print(json.dumps(out))
""")


def python39():
    """A Python 3.9 that runs (a pyenv shim of a version not selected does not)."""
    found = [os.environ.get("TPUJOBS_PYTHON39")]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9.*/bin/python3.9")))
    found.append(shutil.which("python3.9"))
    for python in found:
        if python and os.access(python, os.X_OK) and subprocess.run(
                [python, "-c", "import sys; assert sys.version_info[:2] == (3, 9)"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return python
    return None


def setUpModule():
    global service, strict
    service, (strict,) = start_module()


def tearDownModule():
    close_all(strict, service)


class Python39Test(ContractTestCase):
    def test_every_module_parses_with_the_grammar_of_3_9(self):
        package = os.path.dirname(tpujobs.__file__)
        names = sorted(n for n in os.listdir(package) if n.endswith(".py"))
        self.assertIn("client.py", names)
        for name in names:
            with open(os.path.join(package, name), encoding="utf-8") as f:
                ast.parse(f.read(), name, feature_version=(3, 9))
        with self.assertRaises(SyntaxError):  # the check knows 3.9 from later versions
            ast.parse("match x:\n    case 1:\n        pass\n", feature_version=(3, 9))

    def test_installed_and_used_by_python_3_9(self):
        python = python39()
        if python is None:
            self.skipTest("no Python 3.9 here (set TPUJOBS_PYTHON39)")
        with tempfile.TemporaryDirectory(prefix="tpujobs-py39-") as work:
            package = os.path.join(work, "python")
            shutil.copytree(os.path.join(SOURCE, "client", "python"), package)
            site = os.path.join(work, "site")
            subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index",
                            "--no-build-isolation", "--disable-pip-version-check",
                            "--no-warn-script-location", "--target", site, package],
                           check=True, env=dict(os.environ, PIP_ROOT_USER_ACTION="ignore"),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            here = os.path.dirname(os.path.abspath(__file__))
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([site, here]),
                       PYTHONDONTWRITEBYTECODE="1")
            done = subprocess.run([python, "-c", SCRIPT, strict.url, site], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=900)
        self.assertEqual(done.returncode, 0, done.stdout)
        import json
        out = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertEqual(out, {"valid": True, "cores": 8, "rejected": ["trainer.devices"],
                               "missing": 404, "state": "SUCCEEDED", "logs": True,
                               "listed": True, "drift": True}, done.stdout)


if __name__ == "__main__":
    unittest.main()
