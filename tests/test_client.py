"""The client and pipeline against a real HTTP server on loopback (tests/fake_gateway.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import text_of
from fake_gateway import FakeServer
from gateway_lm.gateway.client import MAX_REPORTED_RETRY_AFTER, GatewayClient, encode_body, parse_retry_after
from gateway_lm.gateway.errors import MAX_DETAIL, GatewayError, error_from_response, error_from_stream
from gateway_lm.messages import ChatRequest
from gateway_lm.offer.catalogue import catalogue
from gateway_lm.pipeline import ChatOutcome, stream_chat
from gateway_lm.settings import Settings

USER = [{"role": 1, "content": [{"type": "text", "value": "hi"}]}]


def settings_for(gateway: FakeServer, **extra: Any) -> Settings:
    return Settings(baseUrl=gateway.base_url, **extra)


async def chat(
    settings: Settings,
    model: str,
    tools: list[dict[str, Any]] | None = None,
    messages: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], ChatOutcome]:
    request = ChatRequest.model_validate({"model": model, "messages": messages or USER, "tools": tools or []})
    client = GatewayClient(settings)
    outcome = ChatOutcome()
    parts: list[dict[str, Any]] = []
    try:
        async for batch in stream_chat(request, settings, client, "test-key", outcome):
            parts.extend(batch)
    finally:
        await client.aclose()
    return parts, outcome


async def failure(settings: Settings, model: str) -> tuple[GatewayError, list[dict[str, Any]]]:
    parts: list[dict[str, Any]] = []
    request = ChatRequest.model_validate({"model": model, "messages": USER})
    client = GatewayClient(settings)
    try:
        async for batch in stream_chat(request, settings, client, "test-key"):
            parts.extend(batch)
    except GatewayError as error:
        return error, parts
    finally:
        await client.aclose()
    raise AssertionError("expected a GatewayError")


async def test_text_streams_with_usage_and_bearer(gateway: FakeServer) -> None:
    parts, outcome = await chat(settings_for(gateway), "fake/text")
    assert text_of(parts) == "Hello from the fake gateway."
    assert len([p for p in parts if p["type"] == "text"]) == 6
    assert outcome.usage is not None and outcome.usage["inputTokens"] == 42
    assert outcome.finish_reason == "stop" and outcome.response_id == "resp_fake_1"
    assert gateway.gateway.requests[0]["authorization"] == "Bearer test-key"
    assert gateway.gateway.requests[0]["path"] == "/v1/responses"


async def test_tool_round_trip(gateway: FakeServer) -> None:
    tools = [{"name": "read file", "description": "", "inputSchema": {"type": "object"}}]
    parts, outcome = await chat(settings_for(gateway), "fake/tools", tools)
    call = next(p for p in parts if p["type"] == "toolCall")
    assert call["name"] == "read file" and call["input"] == {"city": "Paris", "days": 2}
    assert outcome.finish_reason == "toolCalls"
    history = [
        *USER,
        {"role": 2, "content": [call]},
        {
            "role": 1,
            "content": [
                {"type": "toolResult", "callId": call["callId"], "content": [{"type": "text", "value": "sunny"}]}
            ],
        },
    ]
    parts, _ = await chat(settings_for(gateway), "fake/tools", tools, history)
    assert text_of(parts) == "The tool said: sunny"
    sent = gateway.gateway.requests[-1]["body"]["input"]
    assert [i["type"] for i in sent][-2:] == ["function_call", "function_call_output"]


async def test_api_key_from_environment(gateway: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AI_GATEWAY_API_KEY", "env-key")
    client = GatewayClient(settings_for(gateway))
    try:
        async for _ in client.stream_events({"model": "fake/text", "input": []}, None):
            pass
    finally:
        await client.aclose()
    assert gateway.gateway.requests[0]["authorization"] == "Bearer env-key"


@pytest.mark.parametrize(
    ("status", "kind", "words"),
    [
        (400, "bad_request", "tools.0.name"),
        (401, "auth", "API key"),
        (403, "forbidden", "Free tier"),
        (404, "not_found", "not found"),
        (413, "context_overflow", "too long"),
        (424, "upstream", "Provider failed"),
        (500, "upstream", "Internal error"),
        (502, "upstream", "502 Bad Gateway"),
    ],
)
async def test_error_statuses_are_classified_with_a_fix(
    gateway: FakeServer, status: int, kind: str, words: str
) -> None:
    error, parts = await failure(settings_for(gateway, maxRetries=0), f"fake/error-{status}")
    assert (error.kind, error.status) == (kind, status)
    assert words in error.message
    assert "<html" not in error.message.lower()
    assert parts == []


@pytest.mark.parametrize(
    ("scenario", "status", "scope", "where"),
    [
        ("budget-key", 402, "key", "API Keys"),
        ("budget-team", 403, "team", "AI Gateway → Budgets"),
        ("budget-429", 429, "project", "AI Gateway → Budgets"),
    ],
)
async def test_a_spent_gateway_budget_is_its_own_error_and_is_not_retried(
    gateway: FakeServer, scenario: str, status: int, scope: str, where: str
) -> None:
    error, parts = await failure(settings_for(gateway, maxRetries=3), f"fake/{scenario}")
    assert (error.kind, error.status, error.budget) == ("gateway_budget", status, scope)
    assert error.as_data()["budget"] == scope
    assert len(gateway.gateway.requests) == 1  # a 429 for a budget is not a rate limit to wait out
    assert where in error.message and "Vercel dashboard" in error.message
    assert "maxDailyCost" in error.message  # not to be confused with our own limits
    assert "http" not in error.message.lower()  # the gateway's link is dropped: plain text only
    assert "Wait a moment" not in error.message and "upgrade the plan" not in error.message
    assert parts == []


@pytest.mark.parametrize(
    ("scenario", "advice"),
    [("unverified", "no payment card on file"), ("free-tier-model", "not available on free credits")],
)
async def test_an_account_refusal_says_what_to_change_on_the_account(
    gateway: FakeServer, scenario: str, advice: str
) -> None:
    error, parts = await failure(settings_for(gateway, maxRetries=3), f"fake/{scenario}")
    assert (error.kind, error.status) == ("forbidden", 403)
    assert advice in error.message and "AI Gateway page of the Vercel dashboard" in error.message
    assert "pick another model or upgrade the plan" not in error.message  # the kind's advice, wrong here
    assert len(gateway.gateway.requests) == 1 and parts == []


@pytest.mark.parametrize(
    ("scenario", "rule"),
    [("rule-denied", None), ("rule-denied-reason", "rule_abc123")],
)
async def test_a_team_routing_rule_deny_says_who_can_change_it_and_where(
    gateway: FakeServer, scenario: str, rule: str | None
) -> None:
    error, parts = await failure(settings_for(gateway, maxRetries=3), f"fake/{scenario}")
    assert (error.kind, error.status) == ("routing_rule", 403)
    assert "A routing rule of your Vercel team refused this model" in error.message
    assert "Owners and Members can change or remove the rule" in error.message
    assert "Vercel dashboard → AI Gateway → Routing Rules" in error.message
    assert ("rule_abc123" in error.message) == (rule is not None)
    assert "upgrade the plan" not in error.message  # not the generic forbidden advice
    assert "http" not in error.message.lower()  # a rule's reason is its author's text: no link
    assert len(gateway.gateway.requests) == 1 and parts == []


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"error": "Request denied by a routing rule.", "type": "forbidden", "statusCode": 403}, "routing_rule"),
        ({"error": {"message": "No.", "type": "forbidden", "param": {"ruleId": "rule_1"}}}, "routing_rule"),
        # A rule id that is not one (a link, a line break) is not trusted, nor shown.
        ({"error": {"message": "No.", "type": "forbidden", "param": {"ruleId": "[x](command:y)"}}}, "forbidden"),
        # Other 403s keep the generic words: the free tier, a model allowlist, words without the type.
        ({"error": {"message": "Free tier users cannot use this model", "type": "forbidden"}}, "forbidden"),
        ({"error": {"message": "Model not on the team's allowlist", "type": "forbidden"}}, "forbidden"),
        ({"error": {"message": "a routing rule of some proxy", "type": "proxy_error"}}, "forbidden"),
    ],
)
def test_only_a_routing_rule_deny_is_told_as_one(body: dict[str, Any], kind: str) -> None:
    error = error_from_response(403, json.dumps(body).encode())
    assert error.kind == kind
    assert "command:" not in error.message or kind == "forbidden"
    # The same words on another status are no rule's deny.
    assert error_from_response(400, json.dumps(body).encode()).kind == "bad_request"


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        # Anthropic's 400 about a token budget, OpenAI's quota, the free tier: not a spend budget.
        (
            400,
            {"error": {"message": "`max_tokens` must be greater than `thinking.budget_tokens`", "type": "invalid"}},
            "bad_request",
        ),
        (429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}, "rate_limited"),
        (403, {"error": {"message": "Free tier users cannot use this model", "type": "forbidden"}}, "forbidden"),
        (500, {"error": {"message": "budget service exceeded its time", "type": "internal_server_error"}}, "upstream"),
        # The words alone, on a status a budget refusal takes; the scope as the budgets API names it.
        (402, {"error": {"message": "Budget exceeded", "param": {"scopeType": "api-key"}}}, "gateway_budget"),
        (403, {"error": {"message": "Your spend budget was reached"}}, "gateway_budget"),
    ],
)
def test_only_a_budget_refusal_is_told_as_one(status: int, body: dict[str, Any], kind: str) -> None:
    error = error_from_response(status, json.dumps(body).encode())
    assert error.kind == kind
    if kind == "gateway_budget":
        assert error.budget == ("key" if status == 402 else None)
        assert "one of its spend budgets" in error.message or "API key" in error.message


@pytest.mark.parametrize(
    "error",
    [
        {"message": "The thinking budget exceeds max_tokens", "type": "invalid_request_error"},
        {"message": "Bad request", "code": "thinking_budget_too_low"},
        {"message": "thinking_budget is out of range; supported values are integers from 1 to 24576."},
        {"message": "`max_tokens` must be greater than `thinking.budget_tokens`", "type": "invalid_request_error"},
    ],
)
def test_a_thinking_budget_that_does_not_fit_is_a_request_error_not_a_spent_budget(error: dict[str, Any]) -> None:
    # A budget of tokens, not of money: the request's effort and output limit did not fit together.
    # Told as a spent budget, it sent the user to the Vercel dashboard's billing for a parameter.
    for told in (error_from_response(400, json.dumps({"error": error}).encode()), error_from_stream(error, "failed")):
        assert told.kind == "bad_request", told.message
        assert "Thinking Effort" in told.message and "vercelAiGateway.maxOutputTokens" in told.message
        assert "Budgets" not in told.message and "see the logs" not in told.message


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"error": {"message": "context length exceeded. " + "x" * 60_000, "type": "invalid"}}),
        json.dumps({"error": "y" * 60_000}),
        json.dumps(["z" * 60_000]),
        "<html><title>" + "t" * 60_000 + "</title></html>",
        "w " * 30_000,
        "[" * 5_000 + "]" * 5_000,  # JSON nested too deep for the parser
    ],
)
def test_the_gateways_words_in_an_error_are_bounded_whatever_the_body(body: str) -> None:
    # A 60,000-character message became the chat's error and one log line of that length.
    # Our own words around theirs (a prefix, the advice) are under 300 characters.
    error = error_from_response(400, body.encode())
    assert error.kind in ("bad_request", "context_overflow")
    assert len(error.message) < MAX_DETAIL + 300, len(error.message)
    assert "…" in error.message or len(body) < MAX_DETAIL
    stream = error_from_stream({"error": {"message": body}}, "failed")
    assert len(stream.message) < MAX_DETAIL + 300, len(stream.message)


def test_a_budget_refusal_inside_the_stream_is_told_as_one() -> None:
    error = error_from_stream({"error": {"message": "User budget exceeded", "code": "budget_exceeded"}}, "failed")
    assert (error.kind, error.budget, error.status) == ("gateway_budget", "user", None)


async def test_transient_failures_are_retried_before_the_first_event(gateway: FakeServer) -> None:
    parts, _ = await chat(settings_for(gateway, maxRetries=2), "fake/flaky-503-2")
    assert text_of(parts) == "Hello from the fake gateway."
    assert len(gateway.gateway.requests) == 3


async def test_retries_are_bounded(gateway: FakeServer) -> None:
    error, _ = await failure(settings_for(gateway, maxRetries=1), "fake/flaky-429-5")
    assert error.kind == "rate_limited" and error.retry_after == 0
    assert len(gateway.gateway.requests) == 2


async def test_auth_errors_are_not_retried(gateway: FakeServer) -> None:
    await failure(settings_for(gateway, maxRetries=3), "fake/error-401")
    assert len(gateway.gateway.requests) == 1


async def test_failure_mid_stream_keeps_shown_text_and_is_not_retried(gateway: FakeServer) -> None:
    for model, kind in (("fake/failed", "upstream"), ("fake/reset", "network"), ("fake/noterminal", "protocol")):
        gateway.gateway.requests.clear()
        error, parts = await failure(settings_for(gateway, maxRetries=3), model)
        assert error.kind == kind, model
        assert text_of(parts).startswith("Partial"), model
        assert len(gateway.gateway.requests) == 1, model


async def test_stall_longer_than_idle_timeout(gateway: FakeServer) -> None:
    started = time.monotonic()
    error, parts = await failure(settings_for(gateway, idleTimeout=0.5), "fake/stall")
    assert error.kind == "timeout" and "0.5 s" in error.message
    assert text_of(parts) == "Partial"
    assert time.monotonic() - started < 5


async def test_keepalive_comments_do_not_restart_the_idle_clock(gateway: FakeServer) -> None:
    started = time.monotonic()
    error, parts = await failure(settings_for(gateway, idleTimeout=0.5), "fake/keepalive")
    assert error.kind == "timeout" and "idleTimeout" in error.message
    assert text_of(parts) == "Partial" and time.monotonic() - started < 2


async def test_a_retry_that_would_outlast_the_idle_budget_is_not_made(gateway: FakeServer) -> None:
    # retry-after 2 s with 1 s of budget: waiting could only end in a timeout, so the 429 is final.
    started = time.monotonic()
    error, _ = await failure(settings_for(gateway, idleTimeout=1, maxRetries=2), "fake/ratelimit-wait")
    assert error.kind == "rate_limited" and len(gateway.gateway.requests) == 1
    assert time.monotonic() - started < 0.5


async def test_retries_fit_in_the_request_timeout(gateway: FakeServer) -> None:
    started = time.monotonic()
    error, _ = await failure(settings_for(gateway, requestTimeout=1, maxRetries=5), "fake/hang-headers")
    assert error.kind == "timeout" and "requestTimeout" in error.message
    assert time.monotonic() - started < 1.5 and len(gateway.gateway.requests) == 1


async def test_connection_refused_is_a_network_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(baseUrl=f"http://127.0.0.1:{port}/v1", maxRetries=1)
    error, _ = await failure(settings, "any/model")
    assert error.kind == "network" and "base URL" in error.message


async def test_incomplete_finishes_with_length(gateway: FakeServer) -> None:
    parts, outcome = await chat(settings_for(gateway), "fake/incomplete")
    assert text_of(parts) == "Cut short" and outcome.finish_reason == "length"


async def test_cancelling_closes_the_upstream_stream(gateway: FakeServer) -> None:
    settings = settings_for(gateway)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in chat_stream(settings):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    cancelled_at = time.time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.time() + 2
    while "client_closed_at" not in gateway.gateway.requests[0] and time.time() < deadline:
        await asyncio.sleep(0.01)
    assert gateway.gateway.requests[0]["client_closed_at"] - cancelled_at < 0.2


async def chat_stream(settings: Settings) -> Any:
    request = ChatRequest.model_validate({"model": "fake/slow", "messages": USER})
    client = GatewayClient(settings)
    try:
        async for batch in stream_chat(request, settings, client, None):
            yield batch
    finally:
        await client.aclose()


async def test_models_catalogue(gateway: FakeServer) -> None:
    client = GatewayClient(settings_for(gateway))
    try:
        models = catalogue(await client.list_models(), output_reservation=16384)
    finally:
        await client.aclose()
    by_id = {m.id: m for m in models}
    assert "fake/embed" not in by_id
    text = by_id["fake/text"]
    assert text.maxInputTokens == 200000 - 16384 and text.maxOutputTokens == 32000
    assert text.capabilities.toolCalling and text.capabilities.imageInput and text.reasoning
    assert text.pricing.input == 3.0 and text.pricing.output == 15.0 and text.pricing.cacheRead == 0.3
    plain = by_id["fake/plain"]
    assert not plain.capabilities.toolCalling and plain.maxInputTokens == 8192 - 4096


def test_retry_after_forms() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("inf", None),
        ("1e999", None),
        ("nan", None),
        ("-Infinity", None),
        ("-5", 0.0),
        ("1e300", MAX_REPORTED_RETRY_AFTER),
        ("Fri, 31 Dec 9999 23:59:59 GMT", MAX_REPORTED_RETRY_AFTER),
        ("Mon, 99 Foo 2015 07:28:00 GMT", None),
    ],
)
def test_retry_after_is_finite_and_bounded(header: str, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


async def test_an_unreadable_ca_bundle_falls_back_to_system_certificates(gateway: FakeServer) -> None:
    parts, _ = await chat(settings_for(gateway, caBundle="/nonexistent/ca.pem"), "fake/text")
    assert text_of(parts) == "Hello from the fake gateway."


async def test_proxy_settings_come_from_the_environment(gateway: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy that does not exist: requests fail, proving httpx took it from the environment;
    # NO_PROXY for the gateway's host makes them work again.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "")
    error, _ = await failure(settings_for(gateway, maxRetries=0), "fake/text")
    assert error.kind == "network"
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    parts, _ = await chat(settings_for(gateway), "fake/text")
    assert text_of(parts) == "Hello from the fake gateway."


async def test_a_connection_the_gateway_closed_after_its_answer_is_not_reused(gateway: FakeServer) -> None:
    # `chunked-N` answers keep-alive but the server closes the connection afterwards, as a gateway
    # behind a restarting proxy can: the next request must not fail on that stale connection, even
    # with no retries allowed.
    settings = settings_for(gateway, maxRetries=0)
    client = GatewayClient(settings)
    request = ChatRequest.model_validate({"model": "fake/chunked-20", "messages": USER})
    try:
        for _ in range(5):
            parts = [part async for batch in stream_chat(request, settings, client, "test-key") for part in batch]
            assert text_of(parts) == "".join(f" word{n}" for n in range(17))
    finally:
        await client.aclose()


# Every character, lone surrogates included (JSON's `\ud800` gives Python one), and every number.
JSON_TEXT = st.text(st.characters(codec=None, categories=None), max_size=40)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(JSON_TEXT, inner, max_size=5),
    max_leaves=40,
)


def encoded_or_error(encode: Any, value: Any) -> bytes | type[BaseException]:
    try:
        return bytes(encode(value))
    except Exception as error:  # the kind of failure is what is compared
        return type(error)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(JSON_TEXT, JSON_VALUES, max_size=6))
def test_a_body_is_encoded_to_the_bytes_httpx_writes(value: Any) -> None:
    # The body is encoded once, by a faster encoder where it writes the same bytes (rfcs/0005, "The
    # request path of a long session"): a float, a NaN or a lone surrogate goes as httpx has it.
    by_httpx = encoded_or_error(lambda v: httpx.Request("POST", "http://gateway.test", json=v).content, value)
    assert encoded_or_error(encode_body, value) == by_httpx


async def test_a_chat_goes_out_as_json_with_its_length(gateway: FakeServer) -> None:
    await chat(settings_for(gateway), "fake/text")
    headers = gateway.gateway.requests[-1]["headers"]
    assert headers["content-type"] == "application/json"
    assert headers["content-length"] == str(
        len(json.dumps(gateway.gateway.requests[-1]["body"], separators=(",", ":")))
    )
