"""Reasoning effort per model (issue 22 §1): the menu each model gets in the chat input, and the
level a request carries, through the real sidecar to the fake gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from fake_gateway import FakeServer
from gateway_lm.offer.effort import by_rule, efforts_for
from sidecar_client import Sidecar

USER = [{"role": 1, "content": [{"type": "text", "value": "hi"}]}]


async def started(gateway: FakeServer, settings: dict[str, Any] | None = None) -> Sidecar:
    side = Sidecar()
    await side.start(gateway.base_url + "/efforts/v1", {"maxRetries": 0, "logLevel": "debug", **(settings or {})})
    return side


@pytest.fixture
async def sidecar(gateway: FakeServer) -> AsyncIterator[Sidecar]:
    side = await started(gateway)
    await side.request("gateway/models", {})  # as the extension does first
    yield side
    await side.stop()


async def menus(side: Sidecar) -> dict[str, Any]:
    listed = await side.request("gateway/models", {})
    return {m["id"]: m["configurationSchema"] for m in listed["models"]}


def menu_of(schema: Any) -> tuple[list[str], str]:
    prop = schema["properties"]["reasoningEffort"]
    assert prop["group"] == "navigation" and prop["type"] == "string"
    assert len(prop["enumItemLabels"]) == len(prop["enum"]) == len(prop["enumDescriptions"])
    return prop["enum"], prop["default"]


async def sent(
    side: Sidecar, gateway: FakeServer, model: str, configuration: Any = None, **extra: Any
) -> dict[str, Any] | None:
    """The `reasoning` of the request the gateway received for one chat (None: none)."""
    params: dict[str, Any] = {"requestId": f"r{len(gateway.gateway.requests)}", "model": model, "messages": USER}
    if configuration is not None:
        params["modelConfiguration"] = configuration
    await side.request("gateway/chat", {**params, **extra})
    reasoning: dict[str, Any] | None = gateway.gateway.requests[-1]["body"].get("reasoning")
    return reasoning


def effort(reasoning: dict[str, Any] | None) -> str | None:
    return None if reasoning is None else reasoning.get("effort")


# ---- which levels, and the menu ----


def test_the_rules_give_each_family_its_levels() -> None:
    cases = {
        "openai/gpt-5.2": (["none", "low", "medium", "high", "xhigh"], "none"),
        "openai/gpt-5.1": (["none", "low", "medium", "high"], "none"),
        "openai/gpt-5": (["minimal", "low", "medium", "high"], "medium"),
        "openai/gpt-5-mini": (["minimal", "low", "medium", "high"], "medium"),
        "openai/gpt-5-codex": (["low", "medium", "high"], "medium"),
        "openai/gpt-5-pro": (["high"], "high"),
        "openai/o3": (["low", "medium", "high"], "medium"),
        "openai/o4-mini": (["low", "medium", "high"], "medium"),
        "openai/gpt-oss-120b": (["low", "medium", "high"], "medium"),
        "anthropic/claude-sonnet-4.5": (["default", "low", "medium", "high"], "default"),
    }
    for model, (levels, default) in cases.items():
        rule = by_rule(model)
        assert (rule.levels, rule.default) == (levels, default), model


def test_the_catalogue_wins_over_the_rule_and_unreadable_options_fall_back() -> None:
    said = efforts_for({"reasoning_options": ["low", "HIGH", "turbo"]}, "openai/gpt-5", True)
    # The rule's default (medium) is not among them: with none chosen the provider decides.
    assert said is not None and said.source == "catalogue"
    assert (said.levels, said.default) == (["default", "low", "high"], "default")
    for unreadable in ({"efforts": "high"}, 5, [{"type": "budget", "min": 1}], ["x"] * 100, {"levels": []}):
        fallback = efforts_for({"reasoning_options": unreadable}, "openai/o3", True)
        assert fallback is not None and fallback.source == "rule" and fallback.levels == ["low", "medium", "high"]
    assert efforts_for({"reasoning_options": ["low", "high"]}, "x/y", False) is None


async def test_each_reasoning_model_gets_the_levels_it_accepts(sidecar: Sidecar) -> None:
    listed = await menus(sidecar)
    # From the catalogue: its levels (an unknown one left out) and its default.
    assert menu_of(listed["fake/effort-catalogue"]) == (["low", "medium", "high", "xhigh"], "high")
    # From the catalogue without a default: the provider decides when nothing is chosen.
    assert menu_of(listed["fake/effort-list"]) == (["default", "minimal", "high"], "default")
    # From the family's rule: gpt-5's levels, its own default preselected.
    assert menu_of(listed["openai/gpt-5"]) == (["minimal", "low", "medium", "high"], "medium")
    assert menu_of(listed["fake/reasoning"]) == (["default", "low", "medium", "high"], "default")
    for plain in ("fake/tools", "fake/plain", "fake/pricey"):  # models that do not reason: no menu
        assert listed[plain] is None, plain
    labels = listed["openai/gpt-5"]["properties"]["reasoningEffort"]["enumItemLabels"]
    assert labels == ["Minimal", "Low", "Medium", "High"]


async def test_the_menu_preselects_what_the_settings_would_send(gateway: FakeServer) -> None:
    side = await started(
        gateway, {"reasoningEffort": "xhigh", "reasoningEffortByModel": {"fake/effort-catalogue": "low"}}
    )
    try:
        listed = await menus(side)
        assert menu_of(listed["fake/effort-catalogue"])[1] == "low"  # its own setting
        assert menu_of(listed["openai/gpt-5"])[1] == "high"  # the global xhigh, as gpt-5 takes it
        assert menu_of(listed["fake/effort-list"])[1] == "high"
    finally:
        await side.stop()


# ---- what a request carries ----


async def test_the_users_choice_in_the_chat_input_wins_over_the_settings(gateway: FakeServer) -> None:
    side = await started(
        gateway,
        {
            "reasoningEffort": "low",
            "reasoningEffortByModel": {"openai/gpt-5": "minimal"},
            "modelOptions": {"openai/*": {"reasoningEffort": "medium"}},
        },
    )
    try:
        await side.request("gateway/models", {})
        # The menu untouched: VS Code passes its preselected value, the settings' medium.
        assert effort(await sent(side, gateway, "openai/gpt-5", {"reasoningEffort": "medium"})) == "medium"
        assert effort(await sent(side, gateway, "openai/gpt-5", {"reasoningEffort": "high"})) == "high"
        assert await sent(side, gateway, "openai/gpt-5", {"reasoningEffort": "high"}) == {
            "effort": "high",
            "summary": "auto",
        }
        # No menu value (an older VS Code): the settings decide.
        assert effort(await sent(side, gateway, "openai/gpt-5")) == "medium"
        # A caller's explicit option (another extension through vscode.lm) is the most specific.
        caller = {"modelOptions": {"reasoning_effort": "low"}}
        assert effort(await sent(side, gateway, "openai/gpt-5", {"reasoningEffort": "high"}, **caller)) == "low"
    finally:
        await side.stop()


async def test_the_models_default_untouched_sends_no_effort(sidecar: Sidecar, gateway: FakeServer) -> None:
    assert await sent(sidecar, gateway, "openai/gpt-5", {"reasoningEffort": "medium"}) is None
    assert await sent(sidecar, gateway, "fake/reasoning", {"reasoningEffort": "default"}) is None
    assert effort(await sent(sidecar, gateway, "fake/reasoning", {"reasoningEffort": "high"})) == "high"
    # What VS Code passes is untrusted: a value that is no level is ignored.
    for odd in ({"reasoningEffort": "ultra"}, {"reasoningEffort": 5}, {"reasoningEffort": None}, {"other": "x"}):
        assert await sent(sidecar, gateway, "fake/reasoning", odd) is None, odd


async def test_a_level_a_model_does_not_accept_is_never_sent(gateway: FakeServer) -> None:
    side = await started(gateway, {"reasoningEffort": "xhigh"})
    try:
        await side.request("gateway/models", {})
        assert effort(await sent(side, gateway, "openai/gpt-5")) == "high"  # its highest
        assert effort(await sent(side, gateway, "fake/effort-catalogue")) == "xhigh"
        assert effort(await sent(side, gateway, "fake/effort-list", {"reasoningEffort": "high"})) == "high"
        assert await sent(side, gateway, "fake/tools") is None  # does not reason: no effort at all
        assert effort(await sent(side, gateway, "openai/o3")) == "high"  # not listed: its family's rule
        assert any("'xhigh': 'high' sent instead" in message for _, message in side.logs)
        assert any("fake/tools does not reason" in message for _, message in side.logs)
        # From a caller, and from a per-model extra body: held to the model's levels too.
        caller = {"modelOptions": {"reasoningEffort": "none"}}
        assert effort(await sent(side, gateway, "openai/gpt-5", **caller)) == "minimal"
        assert effort(await sent(side, gateway, "fake/effort-list", {"reasoningEffort": "low"})) == "minimal"
    finally:
        await side.stop()
    side = await started(gateway, {"modelOptions": {"openai/*": {"extraBody": {"reasoning": {"effort": "xhigh"}}}}})
    try:
        await side.request("gateway/models", {})
        assert await sent(side, gateway, "openai/gpt-5") == {"effort": "high"}
    finally:
        await side.stop()
