"""One budget unit (rfcs/0004-token-accounting.md, "One budget unit"): Copilot's own budget formulas
run against what we advertise, and a learned factor moving the advertised window."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fake_gateway import FakeServer
from gateway_lm.offer.budget import WINDOW_STEP, BudgetFactors
from gateway_lm.offer.catalogue import model_from_gateway
from gateway_lm.offer.picker import ModelEntry, picker_entry
from sidecar_client import Sidecar

RESERVATION = 16_384  # the outputReservation default
TOOL_TOKENS = 12_000  # 40 tools, in o200k tokens: what our provideTokenCount answers for them
WINDOWS = [(32_000, 8_192), (200_000, 32_000), (1_000_000, 65_536)]  # context window, max output
FACTORS = [1.0, 1.35, 0.8]  # real tokens per o200k token
# Copilot Chat's agentIntent/backgroundSummarizer: messages may take floor((budget − toolTokens) × 0.9);
# background compaction starts at a jittered 78–82 % of the budget once a tool call has warmed the
# cache, at 90 % before; the ratio is max(o200k render + toolTokens, last reported prompt_tokens).
MESSAGE_SHARE = 0.9
WARM_THRESHOLDS = (0.78, 0.80, 0.82)
COLD_THRESHOLD = 0.90


def entry(window: int, max_output: int, factor: float) -> ModelEntry:
    raw = {"id": "p/m", "context_window": window, "max_tokens": max_output, "tags": ["tool-use"]}
    model = model_from_gateway(raw, RESERVATION)
    assert model is not None
    return picker_entry(model, factor)


def foreground_budget(advertised: int, tool_tokens: int) -> int:
    """Copilot's budget for the messages, which it counts with its own o200k tokenizer."""
    return max(1, math.floor((advertised - tool_tokens) * MESSAGE_SHARE))


def reported_usage(real_input: int, factor: float) -> int:
    """The prompt_tokens of our usage part: real tokens over the entry's factor (extension/wire.ts)."""
    return round(real_input / factor)


def background_ratio(model: ModelEntry, real_input: int) -> float:
    """Copilot's context ratio after a turn whose request had `real_input` tokens at the gateway."""
    f = model.budgetFactor
    rendered = real_input / f  # its o200k render plus our (o200k) tool count: the same request
    return max(rendered, reported_usage(real_input, f)) / model.budgetInputTokens


def first_compacting_prompt(model: ModelEntry, threshold: float) -> int:
    """The smallest real prompt at which Copilot starts a background compaction (bisection)."""
    low, high = 0, model.contextWindow * 2
    while low < high:
        middle = (low + high) // 2
        if background_ratio(model, middle) >= threshold:
            high = middle
        else:
            low = middle + 1
    return low


@pytest.mark.parametrize(("window", "max_output"), WINDOWS)
@pytest.mark.parametrize("factor", FACTORS)
def test_the_largest_foreground_prompt_fits_the_real_limit(window: int, max_output: int, factor: float) -> None:
    model = entry(window, max_output, factor)
    real_limit = model.maxInputTokens  # the window minus the output reservation, in real tokens
    assert real_limit == window - min(RESERVATION, max_output)
    messages = foreground_budget(model.budgetInputTokens, TOOL_TOKENS)
    largest = factor * (messages + TOOL_TOKENS)  # what the gateway counts for the fullest prompt
    assert largest <= real_limit, f"{largest:.0f} real tokens > {real_limit}"
    # And Copilot does not summarise in the foreground before 90 % of the real limit.
    assert largest >= 0.9 * real_limit


@pytest.mark.parametrize(("window", "max_output"), WINDOWS)
@pytest.mark.parametrize("factor", FACTORS)
def test_background_compaction_starts_where_it_does_for_an_o200k_model(
    window: int, max_output: int, factor: float
) -> None:
    model = entry(window, max_output, factor)
    native = entry(window, max_output, 1.0)
    for threshold in (*WARM_THRESHOLDS, COLD_THRESHOLD):
        at = first_compacting_prompt(model, threshold) / model.maxInputTokens
        assert at == pytest.approx(first_compacting_prompt(native, threshold) / native.maxInputTokens, abs=0.002)
        assert at >= threshold - 0.002, f"compaction at {at:.1%} of the real limit, threshold {threshold:.0%}"
    # Usage and render agree: the ratio is the real fraction, whichever term Copilot takes.
    assert background_ratio(model, model.maxInputTokens // 2) == pytest.approx(0.5, abs=0.001)


def test_the_picker_shows_real_numbers_and_what_copilot_budgets() -> None:
    model = entry(200_000, 32_000, 1.35)
    assert model.budgetInputTokens == math.floor(183_616 / 1.35) == 136_011
    assert model.maxInputTokens == 183_616 and model.contextWindow == 200_000
    assert "Context 200K tokens" in model.tooltip
    assert "1.35× what o200k counts: 184K input tokens are 136K to Copilot's budget" in model.tooltip
    assert "o200k" not in entry(200_000, 32_000, 1.0).tooltip


def test_a_window_moves_only_when_the_factor_moves_it_by_more_than_the_step() -> None:
    factors = BudgetFactors()
    assert factors.moves("m", 1.35)
    assert factors.factor("m", 1.35) == 1.35
    assert not factors.moves("m", 1.35 * (1 + WINDOW_STEP / 2))
    assert factors.factor("m", 1.36) == 1.35  # the picker keeps the window it has
    assert factors.moves("m", 1.5)
    assert factors.factor("m", 1.5) == 1.5


LONG = "token accounting " * 200


async def test_a_learned_factor_moves_the_advertised_window_and_says_so(gateway: FakeServer) -> None:
    side = Sidecar()
    moved: list[dict[str, Any]] = []
    side.client.feature("gateway/calibration")(lambda params: moved.append(params))
    await side.start(gateway.base_url, {"maxRetries": 0})

    async def chat(request_id: str, scenario: str) -> None:
        text = f"[scenario:{scenario}] {LONG}"
        params = {
            "requestId": request_id,
            "model": "fake/text",
            "messages": [{"role": 1, "content": [{"type": "text", "value": text}]}],
        }
        await side.request("gateway/chat", params)
        await asyncio.sleep(0.3)  # the calibration runs after the answer

    async def listed() -> dict[str, Any]:
        models = {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}
        return dict(models["fake/text"])

    try:
        before = await listed()
        assert (before["budgetFactor"], before["budgetInputTokens"]) == (1.0, 200_000 - 16_384)
        await chat("c1", "calibrate:1.35")
        assert [m["model"] for m in moved] == ["fake/text"]
        after = await listed()
        assert after["budgetFactor"] == pytest.approx(1.35, abs=0.01)
        assert after["budgetInputTokens"] == math.floor(183_616 / after["budgetFactor"])
        assert after["maxInputTokens"] == 183_616  # the real limit stays what the tooltip shows
        await chat("c2", "calibrate:1.36")  # smoothed to ~1.355: the window would move by < 2 %
        assert len(moved) == 1 and await listed() == after
        await chat("c3", "calibrate:2.0")
        assert len(moved) == 2
        assert (await listed())["budgetFactor"] == pytest.approx(1.68, abs=0.02)
    finally:
        await side.stop()


async def test_the_tokenizer_gateway_counts_more_and_enforces_its_limit(gateway: FakeServer) -> None:
    side = Sidecar()
    await side.start(gateway.base_url + "/tokenizer/v1", {"maxRetries": 0})
    try:
        models = {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}
        assert models["fake/tokenizer"]["maxInputTokens"] == 60_000 - 8_192
        params = {
            "requestId": "t1",
            "model": "fake/tokenizer",
            "messages": [{"role": 1, "content": [{"type": "text", "value": LONG}]}],
        }
        result = await side.request("gateway/chat", params)
        sent = gateway.gateway.requests[-1]
        assert result["usage"]["inputTokens"] == sent["input_tokens"] > 400
        with pytest.raises(JsonRpcException, match="prompt is too long") as caught:
            await side.request(
                "gateway/chat",
                {
                    **params,
                    "requestId": "t2",
                    "messages": [
                        {"role": 1, "content": [{"type": "text", "value": "[scenario:tokenizer:1.35:500] " + LONG}]}
                    ],
                },
            )
        assert caught.value.data["kind"] == "context_overflow"
    finally:
        await side.stop()
