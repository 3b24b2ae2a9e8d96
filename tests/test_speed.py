"""Speed per request (issue 35 §3): the fast-mode menu a model with a fast tier gets in the chat
input, the speed a request carries to the gateway, and the price the spend guard estimates it at,
through the real sidecar to the fake gateway (whose `/efforts/` catalogue lists `fake/speedy-fast`
and `openai/gpt-5-fast`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fake_gateway import FakeServer
from sidecar_client import Sidecar

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
