"""What the prompt cache costs and saves (issue 42 §4; rfcs/0006-spend.md, "Cache reads and writes"),
through the real sidecar to the fake gateway: the usage part's cache reads and writes, the record's
cost with each at the catalogue's rate and what the cache saved, and the spend guard's estimate of a
request whose conversation wrote its prefix to the cache a moment ago."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fake_gateway import FakeServer
from gateway_lm.spend.prices import CACHE_TTL_S, MAX_CACHE_KEYS, CacheKeys
from sidecar_client import Sidecar
from test_spend import billed_for

# fake/long below its 200K tier: $3 in, $15 out, $0.30 read from the cache, $3.75 written to it, per
# million tokens. The `cached` scenario: 1,000 in (600 read, 300 written), 100 out.
IN, OUT, READ, WRITE = 3.0, 15.0, 0.3, 3.75
EXPECTED_OUTPUT = 1000 * OUT / 1e6  # the guard's expected output of a fake/long request


def chat(request_id: str, scenario: str, text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {
        "requestId": request_id,
        "model": "fake/long",
        "messages": [{"role": 1, "content": [{"type": "text", "value": f"[scenario:{scenario}] {text}"}]}],
        **extra,
    }


async def started(gateway: FakeServer, settings: dict[str, Any]) -> Sidecar:
    side = Sidecar()
    await side.start(gateway.base_url + "/tiers/v1", {"maxRetries": 0, "logLevel": "debug", **settings})
    await side.request("gateway/models", {})  # the prices the estimates use
    return side


@pytest.fixture
async def sidecar(gateway: FakeServer, tmp_path: Path) -> AsyncIterator[Sidecar]:
    side = await started(gateway, {"stateDir": str(tmp_path)})
    yield side
    await side.stop()


async def test_cache_reads_and_writes_are_priced_at_their_rates_and_the_saving_kept(sidecar: Sidecar) -> None:
    result = await sidecar.request("gateway/chat", chat("c1", "cached"))
    usage = result["usage"]
    assert (usage["inputTokens"], usage["cachedTokens"], usage["cacheWriteTokens"]) == (1000, 600, 300)
    _, record = await billed_for(sidecar, "c1")  # the fake has no generation for it: the estimate stays
    assert record["billed"] is False and (record["cachedTokens"], record["cacheWriteTokens"]) == (600, 300)
    # 100 fresh × $3 + 600 read × $0.30 + 300 written × $3.75 + 100 out × $15, not 400 × $3 + 600 × $0.30 + …
    assert record["cost"] == pytest.approx((100 * IN + 600 * READ + 300 * WRITE + 100 * OUT) / 1e6)
    # Saved: the reads at the input price less at the read price, less the writes' premium over input.
    assert record["cacheSaved"] == pytest.approx((600 * (IN - READ) - 300 * (WRITE - IN)) / 1e6)
    stored = (await sidecar.request("gateway/usage", {}))["records"]
    assert stored == [record], "the history keeps what the cache saved"


async def refused_estimate(side: Sidecar, params: dict[str, Any]) -> float:
    with pytest.raises(JsonRpcException) as refused:
        await side.request("gateway/chat", params)
    assert refused.value.data["kind"] == "spend_limit"
    estimate: float = refused.value.data["estimate"]
    return estimate


async def test_the_guard_expects_the_conversations_cached_prefix_to_be_read(
    gateway: FakeServer, tmp_path: Path
) -> None:
    """A request whose `prompt_cache_key` an earlier request of the model answered moments ago: its
    input that request sent is expected from the cache, at the read price; a new conversation's
    input is written to it, at the write price, when the body asks for caching; else input price."""
    text = "word " * 20_000  # about 20,000 input tokens: the input dominates the estimate
    keyed = {"fake/long": {"extraBody": {"prompt_cache_key": "conversation-1"}}}
    settings = {"stateDir": str(tmp_path), "maxRequestCost": 0.001, "caching": "auto", "modelOptions": keyed}
    side = await started(gateway, settings)
    try:
        # The first request of the conversation: nothing to read yet, its prefix written to the cache.
        first = await refused_estimate(side, chat("k1", "calibrate:1:written", text))
        result = await side.request("gateway/chat", chat("k2", "calibrate:1:written", text, approvedCost=first))
        assert result["finishReason"] == "stop"
        assert gateway.gateway.requests[-1]["body"]["prompt_cache_key"] == "conversation-1"
        await billed_for(side, "k2")  # settled: its key is remembered
        again = await refused_estimate(side, chat("k3", "calibrate:1", text))
        tokens = (first - EXPECTED_OUTPUT) * 1e6 / WRITE
        assert tokens > 15_000, tokens
        assert again - EXPECTED_OUTPUT == pytest.approx(tokens * READ / 1e6, rel=0.02), "read from the cache"
        # Another conversation of the same model reads nothing; without caching asked it writes nothing.
        other = {"fake/long": {"extraBody": {"prompt_cache_key": "conversation-2"}}}
        await side.request("gateway/configure", {"settings": {**settings, "modelOptions": other}})
        assert await refused_estimate(side, chat("k4", "calibrate:1", text)) == pytest.approx(first, rel=0.02)
        uncached = {**settings, "modelOptions": other, "caching": "off"}
        await side.request("gateway/configure", {"settings": uncached})
        plain = await refused_estimate(side, chat("k5", "calibrate:1", text))
        assert plain - EXPECTED_OUTPUT == pytest.approx(tokens * IN / 1e6, rel=0.02), "at the input price"
        assert len(gateway.gateway.requests) == 1, "only the approved request was sent"
        # That conversation's request answered with nothing read or written (caching off on a provider
        # that caches only when asked): its next request expects nothing from the cache either.
        await side.request("gateway/chat", chat("k6", "calibrate:1", text, approvedCost=plain))
        assert await refused_estimate(side, chat("k7", "calibrate:1", text)) == pytest.approx(plain, rel=0.02)
    finally:
        await side.stop()


def test_the_cache_is_expected_only_within_its_lifetime_and_memory_is_bounded() -> None:
    now = [1000.0]
    keys = CacheKeys(clock=lambda: now[0])
    body = {"prompt_cache_key": "conversation-1"}
    keys.answered("m", body, 5000)
    assert keys.expected_reads("m", body, 8000) == 5000
    assert keys.expected_reads("m", body, 3000) == 3000, "at most this request's input"
    assert keys.expected_reads("other/model", body, 8000) == 0, "another model has its own cache"
    assert keys.expected_reads("m", {}, 8000) == 0 and keys.expected_reads("m", {"prompt_cache_key": 7}, 8000) == 0
    now[0] += CACHE_TTL_S + 1
    assert keys.expected_reads("m", body, 8000) == 0, "the entry has expired"
    for index in range(MAX_CACHE_KEYS + 1):
        keys.answered("m", {"prompt_cache_key": f"k{index}"}, 100)
    assert keys.expected_reads("m", {"prompt_cache_key": "k0"}, 100) == 0, "the oldest was forgotten"
    assert keys.expected_reads("m", {"prompt_cache_key": f"k{MAX_CACHE_KEYS}"}, 100) == 100
    keys.answered("m", body, 5000)
    keys.answered("m", body, 0)  # its provider cached nothing (caching off, or below its minimum)
    assert keys.expected_reads("m", body, 8000) == 0, "nothing left in the cache: nothing expected"
    keys.answered("m", {"prompt_cache_key": "x" * 65}, 100)  # longer than the gateway takes: no key
    assert keys.expected_reads("m", {"prompt_cache_key": "x" * 65}, 100) == 0
