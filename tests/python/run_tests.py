"""Installs client/python as a user would (`pip install`, offline, into a
private --target directory: PEP 668 forbids the system site) and runs the
package's unittest tests against that installed copy, not the source tree.

    python3 run_tests.py BINARY SOURCE_DIR WORK_DIR [unittest names...]
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest


def install(source: str, work: str) -> str:
    site = os.path.join(work, "site")
    shutil.rmtree(site, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="tpujobs-py-build-") as copy:
        # pip builds in the tree it is given: a copy keeps build/ and
        # *.egg-info out of the source tree.
        package = os.path.join(copy, "python")
        shutil.copytree(os.path.join(source, "client", "python"), package)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                        "--no-warn-script-location", "--disable-pip-version-check",
                        "--target", site, package], check=True,
                       env=dict(os.environ, PIP_ROOT_USER_ACTION="ignore"))
    return site


def main() -> int:
    # Nothing written into the source tree (tests/python/__pycache__).
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    binary, source, work = sys.argv[1:4]
    names = sys.argv[4:]
    os.makedirs(work, exist_ok=True)
    site = install(source, work)
    os.environ["TPUJOBS_BINARY"] = binary
    os.environ["TPUJOBS_SOURCE_DIR"] = source
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [site, here]
    import tpujobs
    if not tpujobs.__file__.startswith(site):
        print("tpujobs was imported from %s, not the installed copy" % tpujobs.__file__)
        return 1
    loader = unittest.TestLoader()
    suite = (loader.loadTestsFromNames(names) if names
             else loader.discover(here, pattern="test_*.py", top_level_dir=here))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
