"""Types are checked as one test of the suite (issue 52: CI in 20 minutes).

mypy (config in pyproject.toml: it checks vizvit/) takes 60-350 s on a fresh clone, where it has no
cache yet, and ~15 s after. Run before the tests it added all of that to CI's wall time; run as a
test, it takes the worker that is not driving the browser, which has time to spare while the other
drives the page (the browser tests are one group on one worker: tests/conftest.py). The README's
test command still fails when a type does, and `.venv/bin/mypy` alone checks the same."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tiny import ROOT

MYPY_TIMEOUT_S = 1200  # a cold run on a loaded 2-core machine took 352 s


@pytest.mark.slow
def test_mypy_finds_no_errors_in_vizvit():
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True,
                         timeout=MYPY_TIMEOUT_S)
    assert run.returncode == 0, f"mypy failed:\n{run.stdout}{run.stderr}"
    assert "Success: no issues found" in run.stdout, run.stdout
