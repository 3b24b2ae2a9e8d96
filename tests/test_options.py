"""Per-model options: the `vercelAiGateway.modelOptions` setting and a caller's `modelOptions`, as
the fake gateway receives them."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fake_gateway import FakeServer
from gateway_lm.gateway.client import GatewayClient
from gateway_lm.gateway.errors import GatewayError
from gateway_lm.messages import ChatRequest
from gateway_lm.pipeline import stream_chat
from gateway_lm.request.options import ModelOptions, for_model, valid_model_options
from gateway_lm.settings import Settings, describe_problems, updated_settings
from sidecar_client import Sidecar

USER = [{"role": 1, "content": [{"type": "text", "value": "hi"}]}]
EVERY_OPTION = {
    "temperature": 0.3,
    "top_p": 0.9,
    "maxOutputTokens": 2048,
    "reasoningEffort": "high",
    "extraBody": {"prompt_cache_key": "project-1", "providerOptions": {"anthropic": {"cacheControl": True}}},
    "extraHeaders": {"x-team": "team-token-42"},
}


async def sent(gateway: FakeServer, settings: Settings, model_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request the gateway received for one chat."""
    request = ChatRequest.model_validate({"model": "fake/text", "messages": USER, "modelOptions": model_options or {}})
    client = GatewayClient(settings)
    try:
        async for _ in stream_chat(request, settings, client, "test-key"):
            pass
    finally:
        await client.aclose()
    entry: dict[str, Any] = gateway.gateway.requests[-1]
    return entry


def with_options(gateway: FakeServer, table: dict[str, Any], **extra: Any) -> Settings:
    settings, problems = updated_settings(Settings(baseUrl=gateway.base_url, **extra), {"modelOptions": table})
    assert problems == {}
    return settings


async def test_every_option_reaches_the_gateway(gateway: FakeServer) -> None:
    settings = with_options(gateway, {"fake/*": EVERY_OPTION}, gatewayOrder=["bedrock"])
    entry = await sent(gateway, settings)
    body = entry["body"]
    assert body["temperature"] == 0.3 and body["top_p"] == 0.9 and body["max_output_tokens"] == 2048
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["prompt_cache_key"] == "project-1"
    # extraBody merges into what the request has: the routing setting stays
    assert body["providerOptions"] == {"gateway": {"order": ["bedrock"]}, "anthropic": {"cacheControl": True}}
    assert entry["headers"]["x-team"] == "team-token-42"
    assert entry["headers"]["x-session-affinity"] == "project-1"  # the header follows the key sent (rfcs/0011)
    assert entry["authorization"] == "Bearer test-key"


async def test_options_override_the_global_settings_and_other_models_are_untouched(gateway: FakeServer) -> None:
    settings = with_options(
        gateway, {"fake/text": {"maxOutputTokens": 100, "reasoningEffort": "default"}}, maxOutputTokens=4000
    )
    settings.reasoningEffort = "low"
    body = (await sent(gateway, settings))["body"]
    assert body["max_output_tokens"] == 100 and "reasoning" not in body
    other = with_options(gateway, {"openai/*": {"temperature": 1.0}})
    assert "temperature" not in (await sent(gateway, other))["body"]


def test_the_most_specific_pattern_wins_option_by_option() -> None:
    table, _ = valid_model_options(
        {
            "*": {"temperature": 1.0, "top_p": 0.5, "extraBody": {"a": 1, "b": 1}},
            "openai/*": {"temperature": 0.5, "extraBody": {"b": 2}},
            "openai/gpt-5": {"temperature": 0.1},
            "openai/gpt-?": {"temperature": 0.9, "maxOutputTokens": 64},  # as specific as openai/*, later
        }
    )
    options = for_model("openai/gpt-5", table)
    assert options.temperature == 0.1  # the exact id, though listed before a matching glob
    assert options.top_p == 0.5 and options.maxOutputTokens == 64
    assert options.extraBody == {"a": 1, "b": 2}
    assert for_model("openai/gpt-4o", table).temperature == 0.5  # 'openai/gpt-?' does not match
    assert for_model("anthropic/claude", table).temperature == 1.0
    tie, _ = valid_model_options({"a/*x": {"temperature": 0.1}, "a/x*": {"temperature": 0.2}})
    assert for_model("a/xx", tie).temperature == 0.2  # equally specific: the later one


@pytest.mark.parametrize(
    ("options", "dropped"),
    [
        ({"temperature": 7}, "temperature"),
        ({"temperature": "hot"}, "temperature"),
        ({"top_p": 1.5}, "top_p"),
        ({"maxOutputTokens": 0}, "maxOutputTokens"),
        ({"reasoningEffort": "max"}, "reasoningEffort"),
        ({"extraBody": {"model": "other/model"}}, "extraBody"),
        ({"extraBody": {"stream": False, "input": []}}, "extraBody"),
        ({"extraBody": {"x": math.nan}}, "extraBody"),
        ({"extraHeaders": {"Authorization": "Bearer other"}}, "extraHeaders"),
        ({"extraHeaders": {"connection": "close"}}, "extraHeaders"),
        ({"extraHeaders": {"x-ok": "a\r\nx-injected: 1"}}, "extraHeaders"),
        ({"extraHeaders": {"x-ok": "café"}}, "extraHeaders"),  # httpx cannot encode it: every chat failed
        ({"extraHeaders": {"x-ok": "a\x1bb"}}, "extraHeaders"),
        ({"extraHeaders": {"X-Team": "a", "x-team": "b"}}, "extraHeaders"),  # one name, twice
        ({"extraHeaders": {"bad name": "x"}}, "extraHeaders"),
        ({"seed": 3}, "seed"),
    ],
)
def test_a_bad_option_is_dropped_naming_the_pattern_and_the_rest_apply(options: dict[str, Any], dropped: str) -> None:
    other = "temperature" if dropped == "top_p" else "top_p"  # a good option beside the bad one
    new, problems = updated_settings(Settings(), {"modelOptions": {"fake/*": {**options, other: 0.25}}})
    assert new.modelOptions["fake/*"].model_fields_set == {other}
    message = describe_problems(problems)
    assert message.count("vercelAiGateway.modelOptions") == 1 and f"'fake/*': {dropped} dropped" in message
    assert "Bearer other" not in message and "other/model" not in message  # reasons, never values


def test_an_entry_that_is_not_an_object_is_dropped_and_the_others_kept() -> None:
    new, problems = updated_settings(Settings(), {"modelOptions": {"a/*": 5, "b/*": {"temperature": 0.5}}})
    assert list(new.modelOptions) == ["b/*"] and "'a/*'" in problems["modelOptions"]
    new, problems = updated_settings(Settings(), {"modelOptions": ["not", "an", "object"]})
    assert new.modelOptions == {} and "modelOptions" in problems


async def test_a_callers_model_options_apply_over_the_setting(gateway: FakeServer) -> None:
    settings = with_options(gateway, {"fake/*": {"temperature": 0.3, "top_p": 0.9}})
    caller = {"temperature": 0.8, "max_tokens": 512, "reasoning_effort": "low", "_capturingTokenCorrelationId": "x"}
    body = (await sent(gateway, settings, caller))["body"]
    assert body["temperature"] == 0.8 and body["top_p"] == 0.9 and body["max_output_tokens"] == 512
    assert body["reasoning"]["effort"] == "low" and "_capturingTokenCorrelationId" not in body


@pytest.mark.parametrize(
    "caller",
    [{"temperature": "hot"}, {"temperature": 7}, {"temperature": True}, {"topP": -1}, {"maxOutputTokens": 1.5}],
)
async def test_a_bad_caller_option_fails_the_request_clearly(gateway: FakeServer, caller: dict[str, Any]) -> None:
    with pytest.raises(GatewayError) as caught:
        await sent(gateway, Settings(baseUrl=gateway.base_url), caller)
    assert caught.value.kind == "bad_request"
    assert f"Invalid modelOptions in the request: {next(iter(caller))}:" in caught.value.message
    assert gateway.gateway.requests == []  # nothing was sent


def test_options_are_finite_numbers() -> None:
    with pytest.raises(ValueError):
        ModelOptions.model_validate({"temperature": math.inf})


async def test_the_sidecar_applies_the_setting_and_reports_a_bad_caller_option(gateway: FakeServer) -> None:
    sidecar = Sidecar()
    await sidecar.start(gateway.base_url, {"modelOptions": {"fake/*": {"temperature": 0.4, "top_p": 2}}})
    try:
        shown = [message for _, message in sidecar.logs if message.startswith("shown:")]
        assert len(shown) == 1 and "vercelAiGateway.modelOptions: 'fake/*': top_p dropped" in shown[0]
        chat = {"requestId": "r1", "model": "fake/text", "messages": USER, "modelOptions": {"topP": 0.5}}
        await sidecar.request("gateway/chat", chat)
        body = gateway.gateway.requests[-1]["body"]
        assert body["temperature"] == 0.4 and body["top_p"] == 0.5
        bad = {**chat, "requestId": "r2", "modelOptions": {"temperature": "hot"}}
        with pytest.raises(JsonRpcException) as caught:
            await sidecar.request("gateway/chat", bad)
        assert "Invalid modelOptions in the request: temperature:" in str(caught.value)
        assert caught.value.data["kind"] == "bad_request"
    finally:
        await sidecar.stop()


async def test_a_header_value_that_cannot_be_sent_is_refused_at_configure_and_chats_go_on(gateway: FakeServer) -> None:
    """Before: accepted, then every chat failed with 'Internal error (UnicodeEncodeError…)'."""
    sidecar = Sidecar()
    table = {"fake/*": {"temperature": 0.2, "extraHeaders": {"x-team": "équipe"}}}
    await sidecar.start(gateway.base_url, {"modelOptions": table, "proxyAuthorization": "Basic \u00e9t\u00e9"})
    try:
        shown = [message for _, message in sidecar.logs if message.startswith("shown:")]
        assert len(shown) == 1, shown
        assert (
            "vercelAiGateway.modelOptions: 'fake/*': extraHeaders dropped (the value of 'x-team' may hold only"
            in shown[0]
        )
        assert "http.proxyAuthorization: may hold only printable ASCII" in shown[0] and "été" not in shown[0]
        chat = {"requestId": "r1", "model": "fake/text", "messages": USER}
        result = await sidecar.request("gateway/chat", chat)
        assert result["finishReason"] == "stop"
        assert gateway.gateway.requests[-1]["body"]["temperature"] == 0.2, "the pattern's other options apply"
    finally:
        await sidecar.stop()


async def test_attribution_headers_go_out_once_whatever_their_case(gateway: FakeServer) -> None:
    """One rule, case-insensitive: a model's extra header replaces ours of the same name (before, a
    mixed-case `X-Title` went out beside ours), and a more specific pattern's replaces a less specific one's."""
    table = {
        "*": {"extraHeaders": {"x-title": "Everyone's", "user-agent": "theirs/0"}},
        "fake/*": {
            "extraHeaders": {"X-Title": "My Tool", "HTTP-Referer": "https://example.com/tool", "User-Agent": "mine/1"}
        },
    }
    entry = await sent(gateway, with_options(gateway, table))
    names = [name.lower() for name, _ in entry["raw_headers"]]
    for name in ("x-title", "http-referer", "user-agent", "accept"):
        assert names.count(name) == 1, (name, entry["raw_headers"])
    assert entry["headers"]["x-title"] == "My Tool" and entry["headers"]["user-agent"] == "mine/1"
    assert entry["headers"]["http-referer"] == "https://example.com/tool"
    plain = await sent(gateway, Settings(baseUrl=gateway.base_url))
    assert plain["headers"]["x-title"] == "Vercel AI Gateway for Copilot Chat", "ours, without extra headers"


async def test_privacy_settings_hold_over_a_models_extra_body_and_the_user_is_told(gateway: FakeServer) -> None:
    """Before: extraBody's providerOptions.gateway.zeroDataRetention false (and `only`, and `store:
    true`) went out over the routing settings, without a word."""
    table = {
        "fake/*": {
            "temperature": 0.3,
            "extraBody": {
                "providerOptions": {
                    "gateway": {
                        "zeroDataRetention": False,
                        "disallowPromptTraining": False,
                        "only": ["sketchy"],
                        "order": ["sketchy"],  # not a privacy setting: the model's to choose
                    },
                    "anthropic": {"cacheControl": True},
                },
            },
        },
        "fake/text": {"extraBody": {"store": True}},
        "fake/te*": {"extraBody": {"providerOptions": None}},  # would replace the routing settings whole
    }
    privacy = {"zeroDataRetention": True, "disallowPromptTraining": True, "gatewayOnly": ["anthropic", "bedrock"]}
    settings, problems = updated_settings(Settings(baseUrl=gateway.base_url, **privacy), {"modelOptions": table})
    message = describe_problems(problems)
    for key, setting in [
        ("zeroDataRetention", "routing.zeroDataRetention"),
        ("disallowPromptTraining", "routing.disallowPromptTraining"),
        ("only", "routing.only"),
    ]:
        assert (
            f"'fake/*': extraBody's providerOptions.gateway.{key} not sent (vercelAiGateway.{setting} holds)" in message
        )
    assert "order" not in message
    assert "'fake/text': extraBody dropped (may not set store" in message
    assert "'fake/te*': extraBody dropped (providerOptions and providerOptions.gateway must be objects)" in message
    body = (await sent(gateway, settings))["body"]
    assert body["store"] is False
    assert body["temperature"] == 0.3
    assert body["providerOptions"] == {
        "gateway": {
            "zeroDataRetention": True,
            "disallowPromptTraining": True,
            "only": ["anthropic", "bedrock"],
            "order": ["sketchy"],
        },
        "anthropic": {"cacheControl": True},
    }
    # The privacy settings left off: the model's extraBody decides, and nothing is said.
    settings, problems = updated_settings(Settings(baseUrl=gateway.base_url), {"modelOptions": table})
    assert "not sent" not in describe_problems(problems)
    gateway_options = (await sent(gateway, settings))["body"]["providerOptions"]["gateway"]
    assert gateway_options == {
        "zeroDataRetention": False,
        "disallowPromptTraining": False,
        "only": ["sketchy"],
        "order": ["sketchy"],
    }
