"""Speed per request (issue 35 §3, issue 42 §5): the menu a model with a fast tier or service tiers
gets in the chat input, the speed or tier a request carries to the gateway, the price the spend
guard estimates it at and the one its record is priced at, through the real sidecar to the fake
gateway (whose `/efforts/` catalogue lists `fake/speedy-fast` and `openai/gpt-5-fast`, and the
tiered `openai/gpt-6-astra` and `google/fake-busy`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fake_gateway import FakeServer
from sidecar_client import Sidecar
from test_spend import billed_for

USER = [{"role": 1, "content": [{"type": "text", "value": "hi"}]}]


async def started(gateway: FakeServer, settings: dict[str, Any] | None = None) -> Sidecar:
    side = Sidecar()
    await side.start(gateway.base_url + "/efforts/v1", {"maxRetries": 0, "logLevel": "debug", **(settings or {})})
    await side.request("gateway/models", {})  # as the extension does first
    return side


@pytest.fixture
async def sidecar(gateway: FakeServer) -> AsyncIterator[Sidecar]:
    side = await started(gateway)
    yield side
    await side.stop()


async def schemas(side: Sidecar) -> dict[str, Any]:
    listed = await side.request("gateway/models", {})
    return {m["id"]: m["configurationSchema"] for m in listed["models"]}


async def speed_sent(side: Sidecar, gateway: FakeServer, model: str, configuration: Any = None) -> Any:
    """The `providerOptions.gateway.speed` of the request the gateway received (None: none)."""
    params: dict[str, Any] = {"requestId": f"s{len(gateway.gateway.requests)}", "model": model, "messages": USER}
    if configuration is not None:
        params["modelConfiguration"] = configuration
    await side.request("gateway/chat", params)
    options = gateway.gateway.requests[-1]["body"].get("providerOptions") or {}
    return (options.get("gateway") or {}).get("speed")


async def test_a_model_with_a_fast_tier_gets_a_speed_menu_with_both_prices(sidecar: Sidecar) -> None:
    listed = await schemas(sidecar)
    speedy = listed["fake/speedy"]["properties"]
    assert "reasoningEffort" not in speedy  # a model that does not reason: the speed menu alone
    menu = speedy["speed"]
    assert (menu["enum"], menu["default"], menu["group"]) == (["standard", "fast"], "standard", "navigation")
    assert menu["enumItemLabels"] == ["Standard", "Fast"]
    assert (
        "$2.00 in / $8.00 out" in menu["enumDescriptions"][0]
        and "$12.00 in / $48.00 out" in menu["enumDescriptions"][1]
    )
    # Beside effort's for a reasoning model; a fast tier without a price says so.
    gpt5 = listed["openai/gpt-5"]["properties"]
    assert gpt5["reasoningEffort"]["enum"] == ["minimal", "low", "medium", "high"]
    assert "no price" in gpt5["speed"]["enumDescriptions"][1]
    # No fast tier listed, or the fast tier itself: no speed menu.
    assert listed["fake/tools"] is None and listed["fake/speedy-fast"] is None
    assert "speed" not in listed["fake/reasoning"]["properties"]


async def test_a_fast_tier_names_its_model(sidecar: Sidecar) -> None:
    """The extension passes a fast tier over for Copilot's small tasks (extension/smalltasks.ts)."""
    tiers = {m["id"]: m["fastTierOf"] for m in (await sidecar.request("gateway/models", {}))["models"]}
    assert (tiers["fake/speedy-fast"], tiers["openai/gpt-5-fast"], tiers["fake/speedy"], tiers["fake/tools"]) == (
        "fake/speedy",
        "openai/gpt-5",
        None,
        None,
    )


async def test_the_choice_in_the_chat_input_reaches_the_gateway(sidecar: Sidecar, gateway: FakeServer) -> None:
    assert await speed_sent(sidecar, gateway, "fake/speedy", {"speed": "fast"}) == "fast"
    assert await speed_sent(sidecar, gateway, "fake/speedy", {"speed": "standard"}) is None
    assert await speed_sent(sidecar, gateway, "fake/speedy") is None  # nothing chosen: standard
    assert await speed_sent(sidecar, gateway, "fake/speedy", {"speed": "warp"}) is None  # not a speed
    # A model the catalogue lists without a fast tier is never sent one.
    assert await speed_sent(sidecar, gateway, "fake/tools", {"speed": "fast"}) is None


async def test_the_models_options_preselect_fast_and_the_menu_overrides_them(gateway: FakeServer) -> None:
    side = await started(gateway, {"modelOptions": {"fake/speedy": {"speed": "fast"}}})
    try:
        assert (await schemas(side))["fake/speedy"]["properties"]["speed"]["default"] == "fast"
        assert await speed_sent(side, gateway, "fake/speedy") == "fast"
        assert await speed_sent(side, gateway, "fake/speedy", {"speed": "fast"}) == "fast"  # the menu untouched
        assert await speed_sent(side, gateway, "fake/speedy", {"speed": "standard"}) is None
    finally:
        await side.stop()


async def test_the_spend_guard_prices_a_fast_request_at_the_fast_tier(gateway: FakeServer) -> None:
    # 1,000 expected output tokens: ≈ $0.008 at standard speed, ≈ $0.048 at the fast tier's price.
    side = await started(gateway, {"maxRequestCost": 0.02})
    try:
        params = {"requestId": "g1", "model": "fake/speedy", "messages": USER}
        result = await side.request("gateway/chat", params)
        assert result["finishReason"] == "stop"
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", {**params, "requestId": "g2", "modelConfiguration": {"speed": "fast"}})
        data = refused.value.data
        assert data["kind"] == "spend_limit" and data["scope"] == "request"
        assert 0.048 <= data["estimate"] < 0.049
        assert len(gateway.gateway.requests) == 1, "the fast request was not sent"
    finally:
        await side.stop()


# ---- service tiers (issue 42 §5): the fake's openai/gpt-6-astra serves the tier asked, and says so;
# google/fake-busy serves the standard tier whatever it is asked.


def sent(gateway: FakeServer) -> tuple[Any, Any]:
    """The last request's `providerOptions.gateway.serviceTier` and top-level `service_tier`."""
    body = gateway.gateway.requests[-1]["body"]
    gateway_options = (body.get("providerOptions") or {}).get("gateway") or {}
    return gateway_options.get("serviceTier"), body.get("service_tier")


async def tier_chat(side: Sidecar, gateway: FakeServer, model: str, configuration: Any = None, **extra: Any) -> Any:
    params: dict[str, Any] = {"requestId": f"t{len(gateway.gateway.requests)}", "model": model, "messages": USER}
    if configuration is not None:
        params["modelConfiguration"] = configuration
    return await side.request("gateway/chat", {**params, **extra})


async def test_models_whose_provider_takes_tiers_offer_them_with_what_each_is_billed_at(sidecar: Sidecar) -> None:
    listed = await schemas(sidecar)
    astra = listed["openai/gpt-6-astra"]["properties"]["speed"]
    assert astra["enum"] == ["standard", "flex", "priority", "ultrafast"] and astra["default"] == "standard"
    assert astra["enumItemLabels"] == ["Standard", "Flex", "Priority", "Ultrafast"]
    standard, flex, priority, ultrafast = astra["enumDescriptions"]
    assert "$1.50 in / $3.00 out" in standard
    assert "provider's flex rate, below the standard price (the model list gives no flex price)" in flex
    assert "provider's priority rate, above the standard price (the model list gives no priority price)" in priority
    assert "six times the standard price" in ultrafast and "no ultrafast price" in ultrafast
    # Google's take flex and priority, not OpenAI's ultrafast; a model with a fast tier gets both kinds.
    assert listed["google/fake-busy"]["properties"]["speed"]["enum"] == ["standard", "flex", "priority"]
    assert listed["openai/gpt-5"]["properties"]["speed"]["enum"] == ["standard", "fast", "flex", "priority"]
    # Other providers' models take none; a fast tier's own entry is no model to tier.
    assert listed["fake/speedy"]["properties"]["speed"]["enum"] == ["standard", "fast"]
    assert listed["fake/tools"] is None and "speed" not in listed["openai/gpt-5-fast"]["properties"]


async def test_the_tier_chosen_reaches_the_gateway_as_it_takes_it(sidecar: Sidecar, gateway: FakeServer) -> None:
    await tier_chat(sidecar, gateway, "openai/gpt-6-astra", {"speed": "flex"})
    assert sent(gateway) == ("flex", None)
    await tier_chat(sidecar, gateway, "openai/gpt-6-astra", {"speed": "priority"})
    assert sent(gateway) == ("priority", None)
    await tier_chat(sidecar, gateway, "openai/gpt-6-astra", {"speed": "ultrafast"})  # only at the top level
    assert sent(gateway) == (None, "ultrafast")
    await tier_chat(sidecar, gateway, "openai/gpt-6-astra", {"speed": "standard"})
    assert sent(gateway) == (None, None)
    # Never a tier a model does not take.
    await tier_chat(sidecar, gateway, "google/fake-busy", {"speed": "ultrafast"})
    assert sent(gateway) == (None, None)
    await tier_chat(sidecar, gateway, "fake/tools", {"speed": "priority"})
    assert sent(gateway) == (None, None)


async def test_the_tier_setting_is_preselected_and_the_menu_overrides_it(gateway: FakeServer) -> None:
    side = await started(gateway, {"serviceTier": "flex"})
    try:
        listed = await schemas(side)
        assert listed["openai/gpt-6-astra"]["properties"]["speed"]["default"] == "flex"
        assert listed["fake/speedy"]["properties"]["speed"]["default"] == "standard"  # takes no tier
        await tier_chat(side, gateway, "openai/gpt-6-astra")
        assert sent(gateway) == ("flex", None)
        await tier_chat(side, gateway, "openai/gpt-6-astra", {"speed": "flex"})  # the menu untouched
        assert sent(gateway) == ("flex", None)
        await tier_chat(side, gateway, "openai/gpt-6-astra", {"speed": "standard"})
        assert sent(gateway) == (None, None), "Standard chosen: the setting's tier is not sent"
        await tier_chat(side, gateway, "openai/gpt-6-astra", {"speed": "ultrafast"})
        assert sent(gateway) == (None, "ultrafast"), "never two tiers at once"
        await tier_chat(side, gateway, "fake/tools")  # its provider takes no tier: the setting's is not sent
        assert sent(gateway) == (None, None)
    finally:
        await side.stop()


async def test_a_request_is_priced_by_the_tier_that_served_it(sidecar: Sidecar, gateway: FakeServer) -> None:
    # The fake's usage: 42 in (10 cached), 7 out; the busy model lists $2 in, $4 out, no cache price.
    result = await tier_chat(sidecar, gateway, "google/fake-busy", {"speed": "priority"}, requestId="busy")
    assert sent(gateway) == ("priority", None) and result["usage"]["servedTier"] == "default"
    _, record = await billed_for(sidecar, "busy")
    assert record["cost"] == pytest.approx((42 * 2 + 7 * 4) / 1e6), "served standard: the standard price"
    result = await tier_chat(sidecar, gateway, "openai/gpt-6-astra", {"speed": "priority"}, requestId="astra")
    assert result["usage"]["servedTier"] == "priority"
    _, record = await billed_for(sidecar, "astra")
    assert record["cost"] is None and record["cacheSaved"] is None, "no list price for priority: unknown until billed"
    result = await tier_chat(sidecar, gateway, "openai/gpt-6-astra", {"speed": "flex"}, requestId="flex")
    assert result["usage"]["servedTier"] == "flex"
    _, record = await billed_for(sidecar, "flex")  # bounded by the standard price: $1.50 in, $0.15 cached, $3 out
    assert record["cost"] == pytest.approx((32 * 1.5 + 10 * 0.15 + 7 * 3) / 1e6)


async def test_the_spend_guard_asks_before_a_tier_without_a_price(gateway: FakeServer) -> None:
    side = await started(gateway, {"maxRequestCost": 1.0})
    try:
        with pytest.raises(JsonRpcException) as refused:
            await tier_chat(side, gateway, "openai/gpt-6-astra", {"speed": "priority"})
        assert refused.value.data["kind"] == "spend_limit" and refused.value.data["scope"] == "unpriced"
        assert refused.value.message == (
            "The model list gives no price for openai/gpt-6-astra's priority tier, so this request's cost"
            " cannot be checked against your spend limit of $1.00."
        )
        assert gateway.gateway.requests == [], "nothing was sent"
        await tier_chat(side, gateway, "openai/gpt-6-astra", {"speed": "ultrafast"}, approvedUnpriced=True)
        assert sent(gateway) == (None, "ultrafast"), "sent as the user approved"
        await tier_chat(side, gateway, "openai/gpt-6-astra", {"speed": "flex"})  # the standard price bounds it
        assert sent(gateway) == ("flex", None)
    finally:
        await side.stop()
