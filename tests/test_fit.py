"""A request fitted into the model's real input limit (issue 12, part 2; rfcs/0004, "Fitting a request").

Copilot reads a model's window once per user turn, so on a model's first agent turn it budgets with
the window it had before any factor was learned and can send a prompt that the model's tokenizer
makes too long. The real sidecar, against the fake gateway's `fake/agent-loop` (a 1.35× tokenizer
with its 44,000-token limit enforced), must send such a request with its oldest tool results cleared
rather than fail the turn, and leave a request that fits untouched."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from conftest import text_of
from fake_agent import INPUT_LIMIT
from fake_gateway import FakeServer
from gateway_lm.request.fit import CLEARED, KEEP_NEWEST, InputLimit, fit_request
from gateway_lm.tokens import tokenizer
from gateway_lm.tokens.tokenizer import count_request
from sidecar_client import Sidecar

MODEL = "fake/agent-loop"
TOOLS = [{"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}}]
FILE = "".join(f"def step_{i}(value: int) -> int:\n    return value * {i}\n" for i in range(400))  # ~6,000 tokens


@pytest.fixture
async def sidecar(gateway: FakeServer) -> AsyncIterator[Sidecar]:
    side = Sidecar()
    await side.start(gateway.base_url, {"logLevel": "debug"})
    await side.request("gateway/models", {})  # the model's listed limit
    yield side
    await side.stop()


def conversation(reads: int) -> list[dict[str, Any]]:
    """A user asking to read files, and `reads` read_file rounds, as VS Code hands them over."""
    messages: list[dict[str, Any]] = [
        {"role": 1, "name": None, "content": [{"type": "text", "value": "Read the files."}]}
    ]
    for n in range(reads):
        call = {"type": "toolCall", "callId": f"call_{n}", "name": "read_file", "input": {"filePath": f"part-{n}.txt"}}
        result = {"type": "toolResult", "callId": f"call_{n}", "content": [{"type": "text", "value": f"{n}\n{FILE}"}]}
        messages += [{"role": 2, "name": None, "content": [call]}, {"role": 1, "name": None, "content": [result]}]
    return messages


async def chat(sidecar: Sidecar, rid: str, reads: int) -> Any:
    params = {"requestId": rid, "model": MODEL, "messages": conversation(reads), "tools": TOOLS}
    return await sidecar.request("gateway/chat", params)


async def learn_the_factor(sidecar: Sidecar) -> None:
    """The turn's first response teaches the sidecar the model's 1.35× factor (off the answer's path)."""
    await chat(sidecar, "warm", 1)
    for _ in range(200):
        if any(f"calibration for {MODEL}" in message for _, message in sidecar.logs):
            return
        await asyncio.sleep(0.025)
    raise AssertionError("the sidecar learned no factor")


async def test_a_request_past_the_real_limit_is_sent_with_its_oldest_tool_results_cleared(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    await learn_the_factor(sidecar)

    result = await chat(sidecar, "long", 6)  # ~6 × 6,000 o200k tokens: ~50,000 real, past 44,000

    sent = gateway.gateway.requests[-1]
    assert result["finishReason"] in ("stop", "toolCalls")
    assert not sent.get("overflow") and sent["real_input_tokens"] <= INPUT_LIMIT
    outputs = [item["output"] for item in sent["body"]["input"] if item.get("type") == "function_call_output"]
    assert outputs[0] == CLEARED  # the oldest gave way
    assert all(FILE in output for output in outputs[-KEEP_NEWEST:])  # the model's newest results stayed
    assert sent["real_input_tokens"] > 0.85 * INPUT_LIMIT  # no more was cleared than needed


async def test_a_request_that_fits_is_sent_untouched(sidecar: Sidecar, gateway: FakeServer) -> None:
    await learn_the_factor(sidecar)
    await chat(sidecar, "fits", 4)  # ~36,000 real tokens
    outputs = [
        item["output"]
        for item in gateway.gateway.requests[-1]["body"]["input"]
        if item.get("type") == "function_call_output"
    ]
    assert len(outputs) == 4 and CLEARED not in outputs


def body_with_outputs(texts: list[str]) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "Read them."}]
    for n, text in enumerate(texts):
        items += [
            {"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": text},
        ]
    return {"model": MODEL, "input": items}


def test_fitting_clears_oldest_first_and_never_the_newest() -> None:
    body = body_with_outputs([FILE] * 5)
    size = count_request(body, MODEL)
    fitted = fit_request(body, MODEL, InputLimit(tokens=int(size * 0.7), factor=1.0))
    outputs = [i["output"] for i in fitted["input"] if i["type"] == "function_call_output"]
    assert outputs[:2] == [CLEARED, CLEARED] and outputs[2:] == [FILE] * 3
    assert count_request(fitted, MODEL) <= 0.94 * size * 0.7
    assert [i["output"] for i in body["input"] if i["type"] == "function_call_output"] == [FILE] * 5  # not mutated

    # Nothing older than the newest results to clear: sent as it is, for the gateway to judge.
    tight = fit_request(body, MODEL, InputLimit(tokens=size // 10, factor=1.0))
    assert [i["output"] for i in tight["input"] if i["type"] == "function_call_output"][-KEEP_NEWEST:] == [FILE] * 2


def test_the_factor_decides_whether_it_fits() -> None:
    body = body_with_outputs([FILE] * 4)
    size = count_request(body, MODEL)
    limit = round(size / 0.96)  # fits with room to spare, as o200k counts it
    assert fit_request(body, MODEL, InputLimit(tokens=limit, factor=1.0)) is body
    assert fit_request(body, MODEL, InputLimit(tokens=limit, factor=1.35)) is not body


def test_the_last_rounds_results_stay_however_many_calls_it_made() -> None:
    body = body_with_outputs([FILE] * 3)
    parallel = [
        {"type": "function_call", "call_id": f"p{n}", "name": "read_file", "arguments": "{}"} for n in range(4)
    ] + [{"type": "function_call_output", "call_id": f"p{n}", "output": FILE} for n in range(4)]
    body["input"] += parallel  # one round that read four files at once
    size = count_request(body, MODEL)
    fitted = fit_request(body, MODEL, InputLimit(tokens=size // 4, factor=1.0))
    outputs = [i["output"] for i in fitted["input"] if i["type"] == "function_call_output"]
    assert outputs == [CLEARED] * 3 + [FILE] * 4


def test_a_request_that_fits_leaves_its_new_results_unencoded(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fit only needs to know the request fits: the history a request before it counted, and the
    # new results' bytes as a bound, show it (rfcs/0005, "The request path of a long session").
    texts = [f"{FILE}# file {n} of the session that fits\n" for n in range(5)]
    count_request(json.loads(json.dumps(body_with_outputs(texts[:4]))), MODEL)  # the last request, calibrated
    grown = json.loads(json.dumps(body_with_outputs(texts)))
    size = len(json.dumps(grown))
    encoded: list[str] = []
    real = tokenizer.encoding
    monkeypatch.setattr(tokenizer, "encoding", lambda name: encoded.append(name) or real(name))
    limit = InputLimit(tokens=size // 2, factor=1.0)  # past the length's bound: counted
    assert fit_request(grown, MODEL, limit) is grown
    assert encoded == []
    # Where the bound does not show it, the count is exact and the fit as before.
    tight = InputLimit(tokens=int(count_request(json.loads(json.dumps(grown)), MODEL) * 0.8), factor=1.0)
    fitted = fit_request(json.loads(json.dumps(grown)), MODEL, tight)
    assert [i["output"] for i in fitted["input"] if i["type"] == "function_call_output"][:1] == [CLEARED]


@pytest.fixture
async def guarded(gateway: FakeServer) -> AsyncIterator[Sidecar]:
    """A spend limit between what the long request costs as fitted (~$0.045) and unfitted (~$0.054)."""
    side = Sidecar()
    await side.start(gateway.base_url, {"logLevel": "debug", "maxRequestCost": 0.05})
    await side.request("gateway/models", {})
    yield side
    await side.stop()


async def test_the_spend_guard_prices_the_request_as_fitted(guarded: Sidecar, gateway: FakeServer) -> None:
    """The guard counts the body that is sent: pricing the unfitted one asked about a cost that the
    fitted request stays under."""
    await learn_the_factor(guarded)
    result = await chat(guarded, "long", 6)
    assert result["finishReason"] in ("stop", "toolCalls")
    outputs = [
        item["output"]
        for item in gateway.gateway.requests[-1]["body"]["input"]
        if item.get("type") == "function_call_output"
    ]
    assert outputs[0] == CLEARED


# ---- the first overflow on an unknown limit (issue 22 §4) ----

UNKNOWN_LIMIT = 28_000  # what the provider enforces on a model the list says has 128K


async def test_a_first_overflow_on_an_unknown_limit_is_learned_and_the_request_sent_again(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    """fake/tools is listed with a 128K window; the provider (the fake's `tokenizer` scenario at 1×)
    refuses past 28,000 tokens. The turn completes: the limit is learned, the same request fitted to
    it is sent once more, and nothing but a log line tells of it."""
    messages = conversation(6)  # ~36,000 tokens of tool results
    messages[0]["content"][0]["value"] = f"[scenario:tokenizer:1:{UNKNOWN_LIMIT}] Read the files."
    before = len(gateway.gateway.requests)
    params = {"requestId": "unknown-limit", "model": "fake/tools", "messages": messages, "tools": TOOLS}

    result = await sidecar.request("gateway/chat", params)

    assert result["finishReason"] == "stop"
    assert text_of(sidecar.parts["unknown-limit"]) == "Hello from the fake gateway."
    first, second = gateway.gateway.requests[before:]  # one refusal, one answer, nothing more
    assert first["input_tokens"] > UNKNOWN_LIMIT and second["input_tokens"] <= UNKNOWN_LIMIT
    outputs = [item["output"] for item in second["body"]["input"] if item.get("type") == "function_call_output"]
    assert outputs[0] == CLEARED and all(FILE in output for output in outputs[-KEEP_NEWEST:])
    assert any("sent again fitted to it" in message for _, message in sidecar.logs)
    assert not any(message.startswith("shown:") for _, message in sidecar.logs), "nothing shown to the user"
    listed = {m["id"]: m for m in (await sidecar.request("gateway/models", {}))["models"]}
    assert listed["fake/tools"]["maxInputTokens"] < UNKNOWN_LIMIT  # the list says so from now on


async def test_the_turns_later_requests_are_fitted_to_the_learned_limit_before_they_are_sent(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    """Copilot keeps a turn's window for the whole turn: after the first overflow taught the limit,
    each later request of the turn (longer still) is fitted before it leaves, not refused and sent
    again; the model list has not been fetched again in between."""
    first = conversation(6)
    first[0]["content"][0]["value"] = f"[scenario:tokenizer:1:{UNKNOWN_LIMIT}] Read the files."
    await sidecar.request(
        "gateway/chat", {"requestId": "turn-1", "model": "fake/tools", "messages": first, "tools": TOOLS}
    )
    before = len(gateway.gateway.requests)
    for step in (7, 8):
        later = conversation(step)
        later[0]["content"][0]["value"] = first[0]["content"][0]["value"]
        params = {"requestId": f"turn-{step}", "model": "fake/tools", "messages": later, "tools": TOOLS}
        result = await sidecar.request("gateway/chat", params)
        assert result["finishReason"] == "stop"
    sent = gateway.gateway.requests[before:]
    assert len(sent) == 2, "one request each: none refused"
    assert all(entry["input_tokens"] <= UNKNOWN_LIMIT for entry in sent)


async def test_a_summary_request_is_fitted_too_so_copilot_can_compact(sidecar: Sidecar, gateway: FakeServer) -> None:
    """Copilot's compaction request carries the whole history, its calls and results as text (no
    tools): its oldest results are cleared like tool results, so it fits the learned limit and the
    model can summarise, where it was refused again and again ("Could not compact conversation")."""
    marker = f"[scenario:tokenizer:1:{UNKNOWN_LIMIT}]"
    first = conversation(6)
    first[0]["content"][0]["value"] = f"{marker} Read the files."
    await sidecar.request(
        "gateway/chat", {"requestId": "turn-1", "model": "fake/tools", "messages": first, "tools": TOOLS}
    )
    before = len(gateway.gateway.requests)
    summary = f"Summarize the conversation history so far, paying attention to the files read. {marker}"
    messages = [*conversation(8), {"role": 1, "name": None, "content": [{"type": "text", "value": summary}]}]
    result = await sidecar.request(
        "gateway/chat", {"requestId": "compact", "model": "fake/tools", "messages": messages}
    )
    assert result["finishReason"] == "stop"
    (sent,) = gateway.gateway.requests[before:]  # fitted before it left: not refused
    assert sent["input_tokens"] <= UNKNOWN_LIMIT
    texts = [item["content"][0]["text"] for item in sent["body"]["input"] if item.get("type") == "message"]
    assert not any(item.get("type") == "function_call" for item in sent["body"]["input"])  # a transcript
    assert texts[2] == f"[the tool read_file returned]\n{CLEARED}"  # the oldest result
    assert sum(FILE in text for text in texts) >= KEEP_NEWEST and texts[-1] == summary


async def test_a_request_that_cannot_be_fitted_fails_with_the_learned_limit(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    """Without tool results there is nothing to clear: no second request, the overflow as before."""
    text = f"[scenario:tokenizer:1:{UNKNOWN_LIMIT}] " + FILE * 6
    params = {
        "requestId": "unfittable",
        "model": "fake/tools",
        "messages": [{"role": 1, "content": [{"type": "text", "value": text}]}],
    }
    before = len(gateway.gateway.requests)
    with pytest.raises(JsonRpcException) as raised:
        await sidecar.request("gateway/chat", params)
    assert len(gateway.gateway.requests) == before + 1
    assert "The model's limit is 28,000 tokens; the model list now says so" in str(raised.value)


# ---- the rest of the turn (issue 43 §1) ----
# fake/overflow-agent is listed with 128K (120,000 input tokens after its 8,000-token output); its
# provider refuses past 28,600 tokens (tests/fake_agent.py). Copilot keeps a turn's window; the model's
# window as listed holds until the turn is over, and each answer says what the request was fitted to.

FOLDER = "/ws/big"
PART = "".join(
    f"def step_{i}(value: int) -> int:  # section, line {i}: scale the value and offset it\n    return value * {i}\n"
    for i in range(125)
)  # ~5,000 tokens, as the UI test's files


def reads(numbers: range, summary: str | None = None) -> list[dict[str, Any]]:
    """The user's request, an optional summary, and one read_file round per number."""
    ask = f"Read the 8 files part-NN.txt in [overflow-8:{FOLDER}] one by one, then say so."
    messages: list[dict[str, Any]] = [{"role": 1, "name": None, "content": [{"type": "text", "value": ask}]}]
    if summary is not None:
        messages.append({"role": 1, "name": None, "content": [{"type": "text", "value": summary}]})
    for n in numbers:
        path = f"{FOLDER}/part-{n:02d}.txt"
        call = {"type": "toolCall", "callId": f"call_{n}", "name": "read_file", "input": {"filePath": path}}
        result = {"type": "toolResult", "callId": f"call_{n}", "content": [{"type": "text", "value": PART}]}
        messages += [{"role": 2, "name": None, "content": [call]}, {"role": 1, "name": None, "content": [result]}]
    return messages


READ_TOOL = [
    {
        "name": "read_file",
        "description": "Read a file",
        "inputSchema": {"type": "object", "properties": {"filePath": {"type": "string"}}},
    }
]


@pytest.fixture
async def overflowing(gateway: FakeServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Sidecar, list[Any]]]:
    monkeypatch.setenv("FAKE_GATEWAY_OVERFLOW_AGENT", "1")  # the fake lists fake/overflow-agent
    side = Sidecar()
    moved: list[Any] = []
    side.client.feature("gateway/calibration")(lambda params: moved.append(params))
    await side.start(gateway.base_url, {"logLevel": "debug"})
    yield side, moved
    await side.stop()


async def window(sidecar: Sidecar) -> int:
    models = (await sidecar.request("gateway/models", {}))["models"]
    return int(next(m for m in models if m["id"] == "fake/overflow-agent")["budgetInputTokens"])


async def step(sidecar: Sidecar, rid: str, messages: list[dict[str, Any]], tools: Any = READ_TOOL) -> Any:
    params = {"requestId": rid, "model": "fake/overflow-agent", "messages": messages, "tools": tools}
    return await sidecar.request("gateway/chat", params)


async def test_the_window_a_turn_started_with_is_listed_until_the_turn_is_over(
    overflowing: tuple[Sidecar, list[Any]], gateway: FakeServer
) -> None:
    """Copilot copies a model's window into a turn's endpoint once; VS Code hands the provider the
    model as last listed. The learned limit moves the listed window only once the turn is over, so what
    VS Code passes stays the window the turn budgets with; meanwhile every answer names the limit its
    request was fitted to, the usage part's unit. A summary request beside the turn does not end it."""
    sidecar, moved = overflowing
    listed = await window(sidecar)
    assert listed == 120_000

    refused = await step(sidecar, "over", reads(range(1, 8)))  # ~29,000 tokens: refused, sent again fitted

    assert refused["finishReason"] == "toolCalls"  # the agent goes on: the turn too
    assert [e.get("overflow", False) for e in gateway.gateway.requests] == [True, False]
    summary = "The conversation has grown too large for the context window and must be compacted now."
    compacted = await step(
        sidecar, "compact", [*reads(range(1, 9)), {"role": 1, "content": [{"type": "text", "value": summary}]}]
    )
    assert compacted["finishReason"] == "stop"
    await asyncio.sleep(0.3)  # a calibration runs after each answer
    assert await window(sidecar) == listed, "the turn's window holds while the turn goes on"
    assert moved == [], "no window move told mid-turn"
    assert refused.get("inputLimit") == 28_600 - 8_000, "fitted to the learned limit, and it says so"
    assert refused["budgetFactor"] == pytest.approx(1.0, abs=0.02)

    done = await step(sidecar, "done", reads(range(7, 9), "<summary>FILES-READ: 01, 02, 03, 04, 05, 06</summary>"))

    assert done["finishReason"] == "stop" and done["inputLimit"] == 20_600
    for _ in range(100):
        if moved:
            break
        await asyncio.sleep(0.02)
    assert [m["model"] for m in moved] == ["fake/overflow-agent"], "told once the turn is over"
    assert await window(sidecar) == 20_600, "the next turn is budgeted with the learned limit"


async def test_a_turn_that_fails_moves_the_window_at_once(overflowing: tuple[Sidecar, list[Any]]) -> None:
    """An error ends Copilot's turn ("Sorry, your request failed"): the window moves then."""
    sidecar, moved = overflowing
    await window(sidecar)
    await step(sidecar, "over", reads(range(1, 8)))
    with pytest.raises(JsonRpcException):
        await step(
            sidecar,
            "fails",
            [*reads(range(1, 9)), {"role": 1, "content": [{"type": "text", "value": "[scenario:error-500]"}]}],
        )
    for _ in range(100):
        if moved:
            break
        await asyncio.sleep(0.02)
    assert [m["model"] for m in moved] == ["fake/overflow-agent"]
    assert await window(sidecar) == 20_600
