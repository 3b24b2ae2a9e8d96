"""What each request carries for the provider's prompt cache (issue 42, items 1–3;
rfcs/0011-prompt-cache.md), as the fake gateway receives it from the real sidecar: `caching: "auto"`
and a `cache_anchor_items` by default, a per-conversation `prompt_cache_key` sent again as
`x-session-affinity`, and a conversation's requests sharing their bytes up to the earlier one's last
input item."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fake_gateway import FakeServer
from gateway_lm.messages import ChatRequest
from gateway_lm.request.body import build_request
from gateway_lm.request.cache import AFFINITY_HEADER, MAX_CACHE_KEY
from gateway_lm.request.fit import CLEARED, ClearedResults, InputLimit, fit_request
from gateway_lm.settings import Settings, updated_settings
from gateway_lm.toolnames import ToolNameMap
from sidecar_client import Sidecar

MODEL = "fake/text"
SYSTEM = {"role": 3, "name": None, "content": [{"type": "text", "value": "You are an agent."}]}
READ = {"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object", "properties": {}}}
GREP = {
    "name": "grep",
    "description": "Search",
    "inputSchema": {"properties": {"q": {"type": "string"}}, "type": "object"},
}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "value": value}


def marker() -> dict[str, Any]:
    """Copilot's cache breakpoint, as extension/wire.ts serialises it."""
    return {"type": "data", "mimeType": "cache_control", "data": base64.b64encode(b"ephemeral").decode()}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": 1, "name": None, "content": list(parts)}


def round_trip(n: int, *result_extra: dict[str, Any]) -> list[dict[str, Any]]:
    """One tool round: the assistant's call and its result (a user message, as VS Code has it)."""
    call = {"type": "toolCall", "callId": f"call_{n}", "name": "read_file", "input": {"path": f"f{n}.py"}}
    result = {"type": "toolResult", "callId": f"call_{n}", "content": [text(f"contents of f{n}.py"), *result_extra]}
    return [{"role": 2, "name": None, "content": [call]}, user(result)]


def agent(first: str, rounds: int) -> list[dict[str, Any]]:
    """Copilot's agent shape: system prompt, the global-context user message, the request, tool rounds."""
    messages = [SYSTEM, user(text(f"<environment_info>{first}</environment_info>")), user(text("Fix the bug."))]
    for n in range(rounds):
        messages += round_trip(n)
    return messages


@pytest.fixture
async def sidecar(gateway: FakeServer, request: pytest.FixtureRequest) -> AsyncIterator[Sidecar]:
    side = Sidecar()
    await side.start(gateway.base_url, getattr(request, "param", {}))
    yield side
    await side.stop()


async def chat(sidecar: Sidecar, gateway: FakeServer, messages: list[dict[str, Any]], tools: list[Any]) -> Any:
    rid = f"r{len(gateway.gateway.requests)}"
    await sidecar.request("gateway/chat", {"requestId": rid, "model": MODEL, "messages": messages, "tools": tools})
    return gateway.gateway.requests[-1]


async def test_by_default_every_request_asks_the_gateway_to_cache_with_a_key_per_conversation(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    first = await chat(sidecar, gateway, agent("linux, /work/a", 0), [READ])
    later = await chat(sidecar, gateway, agent("linux, /work/a", 2), [READ])
    other = await chat(sidecar, gateway, agent("linux, /work/b", 2), [READ])

    for entry in (first, later, other):
        body = entry["body"]
        assert body["caching"] == "auto" and "caching" not in (body.get("providerOptions") or {}).get("gateway", {})
        # after Copilot's global-context message: a breakpoint the gateway's own two do not give
        assert body["cache_anchor_items"] == 1
        key = body["prompt_cache_key"]
        assert isinstance(key, str) and 0 < len(key) <= MAX_CACHE_KEY
        assert entry["headers"][AFFINITY_HEADER] == key
    assert first["body"]["prompt_cache_key"] == later["body"]["prompt_cache_key"]  # one conversation
    assert other["body"]["prompt_cache_key"] != first["body"]["prompt_cache_key"]  # another
    assert "ephemeral" not in json.dumps(later["body"])  # a marker is never the model's input


async def test_two_chats_of_one_window_have_keys_of_their_own(sidecar: Sidecar, gateway: FakeServer) -> None:
    # Copilot's global context is the same in every chat of a window; the first request is the chat's.
    fix = await chat(sidecar, gateway, agent("linux, /work/a", 1), [READ])
    other = agent("linux, /work/a", 1)
    other[2] = user(text("Write the docs."))
    docs = await chat(sidecar, gateway, other, [READ])
    assert fix["body"]["prompt_cache_key"] != docs["body"]["prompt_cache_key"]
    # The next turn of the first chat: its new message comes after an answer and moves nothing.
    turn = [
        *agent("linux, /work/a", 1),
        {"role": 2, "name": None, "content": [text("Fixed.")]},
        user(text("Now test it.")),
    ]
    again = await chat(sidecar, gateway, turn, [READ])
    assert again["body"]["prompt_cache_key"] == fix["body"]["prompt_cache_key"]


@pytest.mark.parametrize("sidecar", [{"caching": "off"}], indirect=True)
async def test_caching_off_sends_no_breakpoints_but_keeps_the_key(sidecar: Sidecar, gateway: FakeServer) -> None:
    entry = await chat(sidecar, gateway, agent("x", 1), [READ])
    assert "caching" not in entry["body"] and "cache_anchor_items" not in entry["body"]
    assert entry["body"]["prompt_cache_key"] == entry["headers"][AFFINITY_HEADER]


@pytest.mark.parametrize("sidecar", [{"caching": "default"}], indirect=True)
async def test_an_older_versions_default_reads_as_the_new_default_without_a_message(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    entry = await chat(sidecar, gateway, agent("x", 1), [READ])
    assert entry["body"]["caching"] == "auto"
    assert not [m for _, m in sidecar.logs if "Ignored invalid settings" in m]


def test_the_setting_reads_the_old_value_and_refuses_others() -> None:
    assert updated_settings(Settings(), {"caching": "default"}) == (Settings(caching="auto"), {})
    assert Settings().caching == "auto"
    new, problems = updated_settings(Settings(caching="off"), {"caching": "sometimes"})
    assert new.caching == "off" and set(problems) == {"caching"}


def body_for(messages: list[dict[str, Any]], tools: list[Any] | None = None) -> dict[str, Any]:
    request = ChatRequest.model_validate(
        {"model": "anthropic/claude-sonnet-4.5", "messages": messages, "tools": tools or []}
    )
    return build_request(request, Settings(), ToolNameMap([t.name for t in request.tools]))


async def test_copilots_earliest_marker_before_the_last_two_items_is_the_anchor(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    # An older Copilot's markers: the end of a tool result of the first round (inside its content),
    # and the last round's. Items: 0 context, 1 request, 2 call_0, 3 output_0, 4 call_1, 5 output_1, …
    messages = [SYSTEM, user(text("context")), user(text("Fix it."))]
    messages += round_trip(0, marker()) + round_trip(1) + round_trip(2, marker())
    body = (await chat(sidecar, gateway, messages, [READ]))["body"]
    assert body["cache_anchor_items"] == 4  # through call_0's output
    assert body["input"][3]["output"] == "contents of f0.py"  # the marker itself is not content


def test_a_marker_on_a_user_message_marks_that_message() -> None:
    messages = [SYSTEM, user(text("context")), user(text("Fix it."), marker()), *round_trip(0), *round_trip(1)]
    assert body_for(messages, [READ])["cache_anchor_items"] == 2


def test_markers_only_where_the_gateway_puts_its_own_fall_back_to_the_first_user_message() -> None:
    # Copilot's current request and last tool result: the last two items, the gateway's rolling breakpoint.
    messages = [SYSTEM, user(text("context")), user(text("Fix it.")), *round_trip(0, marker())]
    assert body_for(messages, [READ])["cache_anchor_items"] == 1
    assert body_for([user(text("hi"))])["cache_anchor_items"] == 1  # never past the input


def test_a_summary_requests_anchor_stays_within_its_transcript() -> None:
    messages = [*agent("x", 3), user(text("Summarize the conversation history so far."), marker())]
    body = body_for(messages, [READ])
    assert "tools" not in body  # a summary request: its history as a transcript
    assert 1 <= body["cache_anchor_items"] <= len(body["input"])


async def test_a_conversations_next_request_begins_with_the_bytes_of_the_one_before(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    # Copilot may list the same tools in another order from one request to the next.
    first = await chat(sidecar, gateway, agent("linux", 2), [READ, GREP])
    second = await chat(sidecar, gateway, agent("linux", 3), [GREP, READ])
    raw1, raw2 = first["raw"], second["raw"]
    # `input` is the body's last field: everything before it, and its first items, are the prefix.
    assert list(first["body"])[-1] == "input" and raw1.endswith(b"]}")
    assert raw2.startswith(raw1[:-2]) and raw2[len(raw1) - 2 : len(raw1) - 1] == b","
    assert len(second["body"]["input"]) == len(first["body"]["input"]) + 2


def results_body(sizes: list[int]) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    ]
    for n, size in enumerate(sizes):
        items += [
            {"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": f"{n} " + "word " * size},
        ]
    return {"model": "openai/gpt-5", "input": items}


def test_a_result_cleared_once_stays_cleared_when_the_next_request_would_fit() -> None:
    cleared = ClearedResults()
    tight = fit_request(results_body([3000, 3000, 3000, 3000]), "openai/gpt-5", InputLimit(10_000, 1.0), None, cleared)
    gone = [i for i, item in enumerate(tight["input"]) if item.get("output") == CLEARED]
    assert gone  # the oldest gave way
    # The next request of the conversation fits (a lower factor was learned): what went stays gone,
    # so its history is the same bytes as before, up to its new items.
    roomy = fit_request(
        results_body([3000, 3000, 3000, 3000, 10]), "openai/gpt-5", InputLimit(10_000, 0.5), None, cleared
    )
    assert roomy["input"][: len(tight["input"])] == tight["input"]
    # Another conversation's result under the same call id, not the same output, is not cleared.
    other = results_body([3001, 10, 10, 10])
    assert fit_request(other, "openai/gpt-5", InputLimit(10_000, 0.5), None, cleared) is other


async def test_a_request_fitted_into_the_limit_keeps_the_bytes_of_the_one_before(gateway: FakeServer) -> None:
    # fake/agent-loop: a 1.35× tokenizer and a 44,000-token limit; six file reads are past it, so the
    # oldest results are cleared (fit.py). The next request of that conversation keeps them cleared.
    side = Sidecar()
    await side.start(gateway.base_url, {"logLevel": "debug"})
    try:
        await side.request("gateway/models", {})
        await learn_the_factor(side, gateway)
        first = await loop_chat(side, gateway, fit_conversation(6))
        answered = [
            *fit_conversation(6),
            {"role": 2, "name": None, "content": [text("Read them all.")]},
            user(text("Now the tests.")),
        ]
        second = await loop_chat(side, gateway, answered)
    finally:
        await side.stop()
    assert first["body"]["input"][2]["output"] == CLEARED
    assert second["raw"].startswith(first["raw"][:-2])


FILE = "".join(f"def step_{i}(value: int) -> int:\n    return value * {i}\n" for i in range(400))  # ~6,000 tokens


def fit_conversation(reads: int) -> list[dict[str, Any]]:
    messages = [user(text("Read the files."))]
    for n in range(reads):
        call = {"type": "toolCall", "callId": f"call_{n}", "name": "read_file", "input": {"filePath": f"part-{n}.txt"}}
        result = {"type": "toolResult", "callId": f"call_{n}", "content": [text(f"{n}\n{FILE}")]}
        messages += [{"role": 2, "name": None, "content": [call]}, user(result)]
    return messages


async def loop_chat(side: Sidecar, gateway: FakeServer, messages: list[dict[str, Any]]) -> Any:
    rid = f"loop{len(gateway.gateway.requests)}"
    params = {"requestId": rid, "model": "fake/agent-loop", "messages": messages, "tools": [READ]}
    await side.request("gateway/chat", params)
    return gateway.gateway.requests[-1]


async def learn_the_factor(side: Sidecar, gateway: FakeServer) -> None:
    """The first response teaches the sidecar the model's 1.35× factor (as tests/test_fit.py does)."""
    await loop_chat(side, gateway, fit_conversation(1))
    for _ in range(200):
        if any("calibration for fake/agent-loop" in message for _, message in side.logs):
            return
        await asyncio.sleep(0.025)
    raise AssertionError("the sidecar learned no factor")
