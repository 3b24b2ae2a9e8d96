from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_gateway import FakeServer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def gateway() -> Iterator[FakeServer]:
    server = FakeServer().start()
    yield server
    server.shutdown()
    server.server_close()
