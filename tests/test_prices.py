"""Prices where VS Code shows them, and the context the user pays for (issue 35 §1, §2): the
catalogue's tiered prices, VS Code's own price fields and badge, the context-size menu, and the price
the guard and the records use, through the real sidecar and the fake gateway's catalogue."""

from __future__ import annotations

import logging
import math
import sys
from typing import Any

import pytest

from fake_gateway import FakeServer
from gateway_lm.money import per_million, usd
from gateway_lm.offer.catalogue import catalogue, pricing_from
from gateway_lm.offer.contextsize import MIN_OPTION_TOKENS, chosen_tokens
from gateway_lm.offer.picker import CREDITS_PER_USD, context_options, host_pricing, picker_entry, price_category
from gateway_lm.request.fit import CLEARED, KEEP_NEWEST
from gateway_lm.spend.prices import in_force, request_estimate, usage_cost
from gateway_lm.tokens.tokenizer import count_request
from sidecar_client import Sidecar

TIERED = {
    "input": "0.000003",
    "output": "0.000015",
    "input_cache_read": "0.0000003",
    "input_tiers": [{"cost": "0.000003", "min": 0, "max": 200001}, {"cost": "0.000006", "min": 200001}],
    "output_tiers": [{"cost": "0.000015", "min": 0, "max": 200001}, {"cost": "0.0000225", "min": 200001}],
}


def model(pricing: Any, window: int = 1_000_000, max_tokens: int = 64_000) -> dict[str, Any]:
    return {"id": "fake/long", "context_window": window, "max_tokens": max_tokens, "tags": [], "pricing": pricing}


def test_tiered_prices_are_read_as_the_gateway_bills_them() -> None:
    pricing, dropped = pricing_from(TIERED)
    assert dropped == 0
    assert (pricing.input, pricing.output, pricing.cacheRead) == (3.0, 15.0, 0.3)
    [tier] = pricing.tiers
    # The tier starts where the gateway's does; a price it does not list is the base price.
    assert (tier.fromInputTokens, tier.input, tier.output, tier.cacheRead) == (200_001, 6.0, 22.5, 0.3)


def test_a_catalogue_without_flat_prices_takes_the_first_tiers() -> None:
    pricing, _ = pricing_from({k: v for k, v in TIERED.items() if k.endswith("_tiers")})
    assert (pricing.input, pricing.output) == (3.0, 15.0)
    assert [t.fromInputTokens for t in pricing.tiers] == [200_001]


@pytest.mark.parametrize(
    "tiers",
    [
        "0.000006",  # not a list
        [{"cost": "NaN", "min": 200001}],
        [{"cost": "0.000006", "min": -5}],
        [{"cost": "0.000006", "min": 200001, "max": 100}],  # ends before it starts
        [{"cost": "1e400", "min": 200001}],
        [{"cost": "0.000006", "min": "lots"}],
        [None],
    ],
)
def test_an_unreadable_tier_is_dropped_never_nan(tiers: Any, caplog: pytest.LogCaptureFixture) -> None:
    raw = {"input": "0.000003", "output": "0.000015", "input_tiers": tiers}
    with caplog.at_level(logging.WARNING, logger="gateway_lm.offer.catalogue"):
        [info] = catalogue([model(raw)], 16_000)
    assert (info.pricing.input, info.pricing.output, info.pricing.tiers) == (3.0, 15.0, [])
    assert all(math.isfinite(v) for v in host_pricing(info.pricing).model_dump().values() if isinstance(v, float))  # type: ignore[union-attr]
    lines = [r.getMessage() for r in caplog.records if "prices" in r.getMessage()]
    assert len(lines) == 1 and "fake/long" in lines[0], lines


def test_one_log_line_for_a_whole_list_of_bad_prices(caplog: pytest.LogCaptureFixture) -> None:
    bad = [{**model({"input": "NaN", "output": "-1"}), "id": f"bad/{i}"} for i in range(20)]
    with caplog.at_level(logging.WARNING, logger="gateway_lm.offer.catalogue"):
        listed = catalogue(bad, 16_000)
    assert len(listed) == 20 and all(m.pricing.input is None for m in listed)
    assert len([r for r in caplog.records if "prices" in r.getMessage()]) == 1


def test_vs_codes_price_fields_are_credits_per_million_tokens() -> None:
    [info] = catalogue([model({**TIERED, "input_cache_write": "0.00000375"})], 16_000)
    fields = host_pricing(info.pricing)
    assert fields is not None
    # $3 per million tokens is 300 credits of $0.01 per million tokens, as Copilot lists Sonnet.
    assert CREDITS_PER_USD == 100
    assert (fields.inputCost, fields.outputCost, fields.cacheCost, fields.cacheWriteCost) == (300, 1500, 30, 375)
    assert (fields.longContextInputCost, fields.longContextOutputCost) == (600, 2250)
    assert fields.priceCategory == "medium"
    assert fields.pricing == "$3.00 in / $15.00 out per million tokens"


def test_a_model_without_prices_has_no_price_fields() -> None:
    [info] = catalogue([model({"input": "0.000001"})], 16_000)  # no output price
    assert host_pricing(info.pricing) is None
    flat = catalogue([model({"input": "0.000001", "output": "0.000002"})], 16_000)[0]
    assert host_pricing(flat.pricing).longContextInputCost is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("prices", "category"),
    [
        ((0.25, 2.0), "low"),  # GPT-5 mini
        ((1.0, 5.0), "medium"),  # Haiku 4.5
        ((3.0, 15.0), "medium"),  # Sonnet
        ((5.0, 25.0), "high"),  # Opus 4.5
        ((15.0, 75.0), "very_high"),  # Opus 4.1
    ],
)
def test_the_badge_follows_the_written_rule(prices: tuple[float, float], category: str) -> None:
    assert price_category(*prices) == category


def test_the_context_menu_offers_each_tier_cheapest_first() -> None:
    [info] = catalogue([model(TIERED)], 16_000)
    options = context_options(info)
    assert [o.label for o in options] == ["200K", "1M"]
    assert [o.value for o in options] == [200_000, info.maxInputTokens]
    assert "$3.00 in / $15.00 out" in options[0].description
    assert "$6.00 in / $22.50 out" in options[1].description
    schema = picker_entry(info).configurationSchema
    assert schema is not None and schema.properties.reasoningEffort is None
    menu = schema.properties.contextSize
    assert menu is not None and menu.default == 200_000 and menu.group == "tokens" and menu.type == "number"


def test_the_menus_values_are_in_copilots_budget_unit() -> None:
    """Copilot compares the chosen size with maxInputTokens, which is in o200k tokens (rfcs/0004):
    a model whose tokenizer counts 1.25× o200k reaches 200K real tokens at 160K of Copilot's."""
    [info] = catalogue([model(TIERED)], 16_000)
    entry = picker_entry(info, 1.25)
    menu = entry.configurationSchema.properties.contextSize  # type: ignore[union-attr]
    assert menu is not None and menu.enum == [160_000, entry.budgetInputTokens]


def test_no_menu_where_the_tier_starts_past_the_window() -> None:
    # A learned window of 150K (an overflow) leaves only the cheap tier: nothing to choose.
    [info] = catalogue([model(TIERED, window=150_000, max_tokens=16_000)], 16_000)
    assert context_options(info) == []
    assert picker_entry(info).configurationSchema is None


@pytest.mark.parametrize("start", [1, 2, 1000, MIN_OPTION_TOKENS])
def test_a_tier_that_starts_below_any_real_prompt_is_no_option(start: int, caplog: pytest.LogCaptureFixture) -> None:
    # Every real request reaches such a tier: "Up to 1 input tokens", preselected, would trim every
    # request to nothing. It still prices requests; the options past it are billed at its rates.
    low = {"cost": "0.000004", "min": start}
    raw = {"input": "0.000003", "output": "0.000015", "input_tiers": [low, {"cost": "0.000006", "min": 200001}]}
    with caplog.at_level(logging.WARNING, logger="gateway_lm.offer.catalogue"):
        listed = {m.id: m for m in catalogue([model(raw), {**model(TIERED), "id": "fake/fine"}], 16_000)}
        [alone] = catalogue([model({**raw, "input_tiers": [low]})], 16_000)
    info = listed["fake/long"]
    assert [t.fromInputTokens for t in info.pricing.tiers] == [start, 200_001]
    assert in_force(info.pricing, 20_000).input == 4.0
    options = context_options(info)
    assert [o.label for o in options] == ["200K", "1M"]
    assert "$4.00 in / $15.00 out" in options[0].description
    assert context_options(alone) == [] and picker_entry(alone).configurationSchema is None
    lines = [r.getMessage() for r in caplog.records if "context size" in r.getMessage()]
    assert len(lines) == 2 and "fake/long" in lines[0] and "fake/fine" not in lines[0], lines


def test_a_tier_past_the_bound_is_an_option() -> None:
    raw = {
        "input": "0.000003",
        "output": "0.000015",
        "input_tiers": [{"cost": "0.000004", "min": MIN_OPTION_TOKENS + 1}],
    }
    [info] = catalogue([model(raw)], 16_000)
    assert [o.inputTokens for o in context_options(info)] == [MIN_OPTION_TOKENS, info.maxInputTokens]


# One rule on both sides (extension/shared/money.ts perMillion and dollars, tests/ts/prices.test.ts):
# zero, of either sign, is "$0.00"; two places from $0.10 up, else two significant digits.
PER_MILLION_SHOWN = [
    (0.0, "$0.00"),
    (-0.0, "$0.00"),
    (3.0, "$3.00"),
    (0.5, "$0.50"),
    (0.1, "$0.10"),
    (0.075, "$0.075"),
    (0.0376, "$0.038"),
    (0.00126, "$0.0013"),
    (0.000001, "$0.000001"),
    (0.0000001, "<$0.000001"),
]


@pytest.mark.parametrize(("price", "shown"), PER_MILLION_SHOWN)
def test_a_price_per_million_tokens_reads_as_money(price: float, shown: str) -> None:
    assert per_million(price) == shown


def test_a_free_model_reads_as_free_everywhere_its_price_is_shown() -> None:
    # Issue 43 §2.11: "$0." for a free model, "$-0." for a price the gateway lists as "-0".
    raw = {"input": "0", "output": "-0", "input_tiers": [{"cost": "0", "min": 0}, {"cost": "0.000001", "min": 200001}]}
    listed = catalogue([{**model(raw), "tags": ["tool-use"]}, {**model(raw), "id": "fake/long-fast"}], 16_000)
    info = next(m for m in listed if m.id == "fake/long")
    entry = picker_entry(info)
    assert entry.hostPricing is not None and entry.hostPricing.pricing == "$0.00 in / $0.00 out per million tokens"
    assert entry.detail.endswith("$0.00/$0.00") and "$0.00 in / $0.00 out" in entry.tooltip
    assert "billed at $0.00 in / $0.00 out" in context_options(info)[0].description
    speed = entry.configurationSchema.properties.speed  # type: ignore[union-attr]
    assert speed is not None and all(": $0.00 in / $0.00 out" in d for d in speed.enumDescriptions), speed
    assert (usd(0.0), usd(-0.0)) == ("$0.00", "$0.00")


def test_the_guard_and_the_records_price_the_tier_the_input_reaches() -> None:
    pricing, _ = pricing_from(TIERED)
    assert in_force(pricing, 200_000).input == 3.0
    assert in_force(pricing, 200_001).input == 6.0
    short = request_estimate(100_000, pricing, 1000)
    long = request_estimate(300_000, pricing, 1000)
    assert short == pytest.approx((100_000 * 3 + 1000 * 15) / 1e6)
    assert long == pytest.approx((300_000 * 6 + 1000 * 22.5) / 1e6)
    usage = {
        "inputTokens": 300_000,
        "cachedTokens": 100_000,
        "cacheWriteTokens": 0,
        "outputTokens": 1000,
        "servedTier": "default",
    }
    assert usage_cost(usage, pricing) == pytest.approx((200_000 * 6 + 100_000 * 0.3 + 1000 * 22.5) / 1e6)  # type: ignore[arg-type]


async def test_the_model_list_carries_the_fields_and_the_menu(gateway: FakeServer) -> None:
    side = Sidecar()
    await side.start(gateway.base_url + "/tiers/v1", {"maxRetries": 0})
    try:
        listed = {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}
    finally:
        await side.stop()
    long = listed["fake/long"]
    assert long["hostPricing"]["inputCost"] == 300 and long["hostPricing"]["longContextInputCost"] == 600
    assert long["configurationSchema"]["properties"]["contextSize"]["enumItemLabels"] == ["200K", "1M"]
    assert "reasoningEffort" not in long["configurationSchema"]["properties"]  # no effort menu
    # Every priced model has the fields; the unpriced one has none.
    assert listed["fake/text"]["hostPricing"]["priceCategory"] == "medium"
    assert listed["fake/pricey"]["hostPricing"]["priceCategory"] == "very_high"
    assert listed["fake/plain"]["hostPricing"] is None
    assert "contextSize" not in (listed["fake/text"]["configurationSchema"] or {}).get(
        "properties", {}
    )  # no tiers, no menu


# The context size chosen in the chat input is the limit a request is fitted into (fit.py): a request
# Copilot did not compact in time gives up its oldest tool results rather than be billed every token
# at the longer context's rates the user did not choose.
READ = "".join(f"def step_{i}(value: int) -> int:\n    return value * {i}\n" for i in range(2000))  # ~38K tokens


def reads(count: int) -> list[dict[str, Any]]:
    """One conversation, sent below at each context size: a result cleared at 200K stays cleared only
    at that size (fit.ClearedResults' scope), so the larger sizes get every result back."""
    messages: list[dict[str, Any]] = [{"role": 1, "name": None, "content": [{"type": "text", "value": "Read them."}]}]
    for n in range(count):
        call = {
            "type": "toolCall",
            "callId": f"c{n}",
            "name": "read_file",
            "input": {"filePath": f"{n}.py"},
        }
        result = {
            "type": "toolResult",
            "callId": f"c{n}",
            "content": [{"type": "text", "value": f"{n}\n{READ}"}],
        }
        messages += [{"role": 2, "name": None, "content": [call]}, {"role": 1, "name": None, "content": [result]}]
    return messages


@pytest.mark.timeout(120)
async def test_a_request_is_fitted_into_the_context_size_chosen(gateway: FakeServer) -> None:
    side = Sidecar()
    await side.start(gateway.base_url + "/tiers/v1", {"maxRetries": 0})
    try:
        listed = {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}
        short, whole = listed["fake/long"]["configurationSchema"]["properties"]["contextSize"]["enum"]
        tools = [{"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}}]
        sent: dict[str, list[str]] = {}
        for label, chosen in (("200K", short), ("1M", whole), ("none", None), ("bad", "lots")):
            params: dict[str, Any] = {
                "requestId": label,
                "model": "fake/long",
                "messages": reads(8),
                "tools": tools,
            }
            if chosen is not None:
                params["modelConfiguration"] = {"contextSize": chosen}
            await side.request("gateway/chat", params)
            body = gateway.gateway.requests[-1]["body"]
            sent[label] = [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
            if label == "200K":
                assert count_request(body, "fake/long") <= 200_000, "past the tier the user chose"
    finally:
        await side.stop()
    assert sent["200K"][0] == CLEARED and all(READ in o for o in sent["200K"][-KEEP_NEWEST:])
    for label in ("1M", "none", "bad"):  # the whole window: ~300K tokens sent as they are
        assert len(sent[label]) == 8 and CLEARED not in sent[label], label
    assert any("not a number of tokens" in message for _, message in side.logs)


def test_a_choice_stored_before_the_factor_moved_still_means_its_tier() -> None:
    [info] = catalogue([model(TIERED)], 16_000)
    options = context_options(info, 1.1)
    assert [chosen_tokens(options, options[0].value * 1.04), chosen_tokens(options, options[1].value * 0.96)] == [
        200_000,
        info.maxInputTokens,
    ]
    assert [chosen_tokens(options, v) for v in (None, True, -1, math.inf, math.nan, "200000")] == [None] * 6
    # The extremes of a positive float: the nearest option still, not "math domain error" (issue 43 §2.4).
    assert [chosen_tokens(options, v) for v in (5e-324, 1e-300, sys.float_info.max)] == [
        200_000,
        200_000,
        info.maxInputTokens,
    ]
    assert chosen_tokens(context_options(info, 1.1)[:1], options[0].value) is None  # no menu
