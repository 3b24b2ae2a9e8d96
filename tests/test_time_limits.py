"""No Python test can hang the suite: pytest-timeout gives each a time limit (pyproject.toml), and one
that runs past it, in its body or its teardown, fails with its name while the run goes on."""

from __future__ import annotations

import subprocess
import sys
import time
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


WITHIN_BUDGET = Path(__file__).parent.parent / "scripts" / "within-budget.sh"


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_step_past_its_budget_is_stopped_with_all_it_started_and_named(tmp_path: Path) -> None:
    """What `make test` runs each step with (.ci/run): a step that hangs ends, named, within its budget."""
    pid_file = tmp_path / "grandchild"
    started = time.monotonic()
    run = subprocess.run(
        ["bash", str(WITHIN_BUDGET), "test-e2e", "1", "bash", "-c", f"sleep 300 & echo $! > {pid_file}; wait"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 1 and "step test-e2e ran past its budget of 1 s" in run.stderr
    assert time.monotonic() - started < 10
    grandchild = int(pid_file.read_text())
    for _ in range(50):
        if not running(grandchild):
            break
        time.sleep(0.1)
    assert not running(grandchild), "the step's own children outlived it"


def test_a_step_within_its_budget_keeps_its_exit_status() -> None:
    run = subprocess.run(
        ["bash", str(WITHIN_BUDGET), "lint", "60", "bash", "-c", "exit 3"], capture_output=True, text=True
    )
    assert run.returncode == 3 and "ran past" not in run.stderr
