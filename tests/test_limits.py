"""No Python test can hang the suite: pytest-timeout gives each a time limit (pyproject.toml), and one
that runs past it, in its body or its teardown, fails with its name while the run goes on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HANGS = """
import threading
import pytest

def test_a_test_that_never_ends():
    threading.Event().wait()

@pytest.fixture
def a_server_that_never_stops():
    yield
    threading.Event().wait()

def test_a_teardown_that_never_ends(a_server_that_never_stops):
    pass

def test_the_test_after_them():
    pass
"""


def test_every_test_has_a_time_limit(pytestconfig: pytest.Config) -> None:
    assert 0 < float(pytestconfig.getini("timeout")) <= 60


def test_a_test_past_its_limit_fails_by_name_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "test_hangs.py").write_text(HANGS)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=1", "test_hangs.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "FAILED test_hangs.py::test_a_test_that_never_ends - Failed: Timeout" in run.stdout
    assert "ERROR test_hangs.py::test_a_teardown_that_never_ends - Failed: Timeout" in run.stdout
    assert "1 failed, 2 passed, 1 error" in run.stdout
