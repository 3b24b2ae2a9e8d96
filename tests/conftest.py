from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_gateway import FakeServer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def gateway() -> Iterator[FakeServer]:
    server = FakeServer().start()
    yield server
    server.stop()


# ---- the reliability table (tests/test_reliability.py and tests/test_untrusted.py fill it; printed
# at the end of the run) ----
RELIABILITY_ROWS: list[tuple[str, str, str, bool]] = []


def record(scenario: str, expected: str, observed: str, ok: bool) -> None:
    RELIABILITY_ROWS.append((scenario, expected, observed, ok))
    assert ok, f"{scenario}: expected {expected}, observed {observed}"


def text_of(parts: Iterable[Mapping[str, Any]]) -> str:
    """The answer's text: the values of its text parts, joined."""
    return "".join(p["value"] for p in parts if p["type"] == "text")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RELIABILITY_ROWS:
        return
    widths = [
        max(len(str(row[i])) for row in [("scenario", "expected", "observed", "pass"), *RELIABILITY_ROWS])
        for i in range(3)
    ]
    terminalreporter.section("reliability: scenario / expected / observed / pass")
    header = ("scenario", "expected", "observed", "pass")
    for row in [header, *RELIABILITY_ROWS]:
        cells = [str(row[i]).ljust(min(widths[i], 60)) for i in range(3)]
        mark = row[3] if row is header else ("PASS" if row[3] else "FAIL")
        terminalreporter.write_line(" | ".join([*cells, str(mark)]))
