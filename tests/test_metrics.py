"""The models' metrics (how fast, how reliable: offer/metrics.py): fetched in the background after a
listing the picker asked for, through the real sidecar and the loopback fake gateway's
`/v1/models/metrics`; carried by `gateway/models` and its tooltips; a gateway without the endpoint
or with an answer that is not the list shows none and says so once; a chat never fetches them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from fake_gateway import FakeServer
from gateway_lm import chats
from gateway_lm.chats import ChatService
from gateway_lm.offer.metrics import metrics_from
from gateway_lm.settings import Settings
from sidecar_client import Sidecar

USER = [{"role": 1, "name": None, "content": [{"type": "text", "value": "hi"}]}]


@pytest.fixture
async def sidecar(gateway: FakeServer, tmp_path: Path) -> AsyncIterator[Sidecar]:
    side = Sidecar()
    await side.start(gateway.base_url, {"stateDir": str(tmp_path), "logLevel": "debug"}, load_tokenizer=False)
    yield side
    await side.stop()


def fetched(gateway: FakeServer) -> list[dict[str, Any]]:
    return [entry for entry in gateway.gateway.lookups if entry["path"] == "metrics"]


async def until(check: Any, what: str) -> None:
    for _ in range(100):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within 5 s: {what}")


def warned(side: Sidecar) -> list[str]:
    return [message for level, message in side.logs if level <= 2 and "model metrics" in message]


async def listed(side: Sidecar) -> dict[str, Any]:
    return {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}


async def test_metrics_arrive_after_the_catalogue_and_reach_the_tooltip(sidecar: Sidecar, gateway: FakeServer) -> None:
    first = await listed(sidecar)
    assert all(m["metrics"] is None for m in first.values()), "the catalogue never waits for them"
    await until(lambda: sidecar.metrics, "the gateway/metrics notification")
    assert sidecar.metrics == [{"models": 4}]
    models = await listed(sidecar)
    tools = models["fake/tools"]["metrics"]
    assert tools == {
        "provider": "fake-a",
        "providers": 1,
        "firstTokenMs": 250,
        "firstTokenP95Ms": 700,
        "tokensPerSecond": 140,
        "uptimePercent": 99.9,
        "summary": "First token 0.25 s (p95 0.7 s) · 140 tokens/s · 99.9 % up",
    }
    assert (
        "First token 0.25 s (p95 0.7 s) · 140 tokens/s · 99.9 % up (the gateway's last hour, fake-a)"
        in (models["fake/tools"]["tooltip"])
    )
    # Two providers: the one with the most samples speaks for the model (the other is faster on 20).
    assert models["fake/text"]["metrics"]["firstTokenMs"] == 800 and models["fake/text"]["metrics"]["providers"] == 2
    assert models["fake/plain"]["metrics"] is None, "a catalogue-only row measured nothing"
    assert "First token" not in models["fake/plain"]["tooltip"]
    [lookup] = fetched(gateway)  # the second listing, within METRICS_EVERY, fetched nothing more
    assert parse_qs(lookup["query"]) == {"type": ["language"], "limit": ["500"]}
    assert warned(sidecar) == []


@pytest.mark.parametrize("mode", ["404", "garbage"])
async def test_a_gateway_without_them_shows_none_and_says_so_once(
    sidecar: Sidecar, gateway: FakeServer, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("FAKE_GATEWAY_METRICS", mode)
    await listed(sidecar)
    await until(lambda: warned(sidecar), "the warning")
    models = await listed(sidecar)
    assert all(m["metrics"] is None and "First token" not in m["tooltip"] for m in models.values())
    assert len(fetched(gateway)) == 1 and sidecar.metrics == [], "nothing changed: no notification"
    [warning] = warned(sidecar)
    assert "no model shows them" in warning


async def test_unreadable_rows_are_dropped_with_one_line(
    sidecar: Sidecar, gateway: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GATEWAY_METRICS", "bad-rows")
    await listed(sidecar)
    await until(lambda: sidecar.metrics, "the gateway/metrics notification")
    assert sidecar.metrics == [{"models": 4}], "the good rows are read"
    assert warned(sidecar) == ["ignored 2 model metrics rows that could not be read"]


async def test_a_chat_never_fetches_them(gateway: FakeServer, tmp_path: Path) -> None:
    """Not the chat, nor the spend guard's listing a chat waits for (a restart's first chat)."""
    side = Sidecar()
    await side.start(gateway.base_url, {"stateDir": str(tmp_path), "maxRequestCost": 100.0}, load_tokenizer=False)
    try:
        for n in range(2):
            await side.request("gateway/chat", {"requestId": f"c{n}", "model": "fake/text", "messages": USER})
        assert [entry["path"] for entry in gateway.gateway.lookups].count("models") == 1, "the guard listed them"
        await asyncio.sleep(0.3)  # a background fetch would have started by now
        assert fetched(gateway) == []
    finally:
        await side.stop()


async def test_a_failure_is_said_once_until_they_come_back(
    gateway: FakeServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The chat service in this process (each listing due for a fetch: METRICS_EVERY 0), the real
    client and fake gateway: a gateway that keeps failing is warned of once; after a success, again."""
    monkeypatch.setattr(chats, "METRICS_EVERY", 0.0)
    changes: list[int] = []
    service = ChatService(metrics_changed=changes.append)
    service.apply(Settings(baseUrl=gateway.base_url))
    try:

        async def listing() -> None:
            await service.list_models(None, metrics=True)
            await until(lambda: not service._background, "the background fetch")

        monkeypatch.setenv("FAKE_GATEWAY_METRICS", "404")
        for _ in range(3):
            await listing()
        monkeypatch.setenv("FAKE_GATEWAY_METRICS", "")
        await listing()
        assert changes == [4] and service.metrics["fake/tools"].firstTokenMs == 250
        monkeypatch.setenv("FAKE_GATEWAY_METRICS", "garbage")
        await listing()
        assert changes == [4, 0] and service.metrics == {}, "an answer that is not the list clears them"
    finally:
        await service.aclose()
    said = [r for r in caplog.records if r.levelname == "WARNING" and "model metrics" in r.getMessage()]
    assert len(said) == 2, [r.getMessage() for r in said]
    assert len(fetched(gateway)) == 5


def test_each_row_is_read_as_documented_and_bounded(caplog: pytest.LogCaptureFixture) -> None:
    """offer/metrics.py on its own: the SDK's field names and units, rows outside the bounds
    dropped with one line, a row of nulls no metrics, an answer without a list none at all."""
    good = {"id": "a/fast", "provider": "p", "latency_last_1h": {"p50": 412.4, "p95": 1200}, "uptime": {"last_1d": 97}}
    bad = [
        {"id": "a/neg", "provider": "p", "latency_last_1h": {"p50": -1, "p95": 2}},
        {"id": "a/slow", "provider": "p", "throughput_last_1h": {"p50": 1e9, "p95": 1e9}},
        {"id": "a/up", "provider": "p", "uptime": {"last_1h": 100.5}},
        {"id": "a/inf", "provider": "p", "latency_last_1h": {"p50": float("inf"), "p95": 1}},
        {"id": "a/link", "provider": "[x](command:y)"},
        {"provider": "p"},
        "not a row",
    ]
    nulls = {"id": "a/nulls", "provider": "p", "uptime": {"last_15m": None, "last_1h": None, "last_1d": None}}
    found = metrics_from({"object": "list", "data": [good, *bad, nulls]})
    assert found is not None and set(found) == {"a/fast"}
    assert found["a/fast"].summary == "First token 0.41 s (p95 1.2 s) · 97 % up", "the day's uptime"
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert said == ["ignored 7 model metrics rows that could not be read"]
    assert metrics_from({"data": {}}) is None and metrics_from(["x"]) is None and metrics_from({"data": [1]}) is None
    assert metrics_from({"object": "list", "data": []}) == {}, "an empty list is a list: no model measured"
