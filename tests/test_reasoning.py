"""Reasoning carried across tool turns (issue 12, part 3), through the real sidecar and the fake
gateway's strict mode (tests/fake_reasoning.py), which refuses a tool-result turn that lacks the
reasoning item that preceded the call, as Anthropic, Gemini 3 and OpenAI (store: false) do.

The history is built as Copilot Chat 0.67 builds it (rfcs/0002, "The reasoning round trip"): one
thinking part per response, its text the response's thinking joined, its id the last one reported,
its metadata the last the provider reported (the extension turns a `reasoningState` part into that
metadata, and the metadata back into the thinking part's `state`), before the tool calls."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from conftest import text_of
from fake_gateway import FakeServer
from fake_reasoning import MARKER, SIGNATURE_INVALID, STEPS, THINKING_MISSING
from gateway_lm.gateway.errors import error_from_response, refuses_lost_reasoning
from gateway_lm.gateway.replay import events_from_recording
from gateway_lm.messages import MAX_ENCRYPTED, MAX_TAGGED, ChatRequest, PartOut, ReasoningItem
from gateway_lm.reasoning import TAG, tag, untag
from gateway_lm.request.body import build_request
from gateway_lm.settings import Settings
from gateway_lm.stream.adapt import adapt_stream
from gateway_lm.toolnames import ToolNameMap
from sidecar_client import Sidecar
from test_translate import assert_valid, body_for, msg, text

TOOLS = [{"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}}]
STRICT = "[scenario:strict-reasoning] read the files"
CALL_AND_OUTPUT = ["function_call", "function_call_output"]


@pytest.fixture
async def sidecar(gateway: FakeServer) -> AsyncIterator[Sidecar]:
    side = Sidecar()
    await side.start(gateway.base_url, {"logLevel": "debug"})
    await side.request("gateway/models", {})  # as the extension does first: which models reason
    yield side
    await side.stop()


async def chat(sidecar: Sidecar, rid: str, model: str, messages: list[dict[str, Any]]) -> Any:
    params = {"requestId": rid, "model": model, "messages": messages, "tools": TOOLS}
    return await sidecar.request("gateway/chat", params)


def user(text: str) -> dict[str, Any]:
    return {"role": 1, "name": None, "content": [{"type": "text", "value": text}]}


def as_copilot_history(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant message and tool results Copilot sends back after a tool-calling response."""
    thinking = [p for p in parts if p["type"] == "thinking"]
    states = [p for p in parts if p["type"] == "reasoningState"]
    calls = [p for p in parts if p["type"] == "toolCall"]
    content: list[dict[str, Any]] = []
    if thinking or states:
        last_id = (states or thinking)[-1].get("id") or states[-1]["items"][-1]["id"]
        part: dict[str, Any] = {"type": "thinking", "value": "".join(p["value"] for p in thinking), "id": last_id}
        if states:
            part["state"] = {"model": states[-1]["model"], "items": states[-1]["items"]}
        content.append(part)
    content += [{"type": "toolCall", "callId": c["callId"], "name": c["name"], "input": c["input"]} for c in calls]
    results = [
        {"type": "toolResult", "callId": c["callId"], "content": [{"type": "text", "value": f"contents {n}"}]}
        for n, c in enumerate(calls)
    ]
    return [{"role": 2, "name": None, "content": content}, {"role": 1, "name": None, "content": results}]


async def tool_loop(sidecar: Sidecar, model: str, prefix: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Runs the agent loop to its answer; returns the last response's parts and every part seen."""
    messages = [user(STRICT)]
    seen: list[dict[str, Any]] = []
    for step in range(STEPS + 1):
        rid = f"{prefix}{step}"
        result = await chat(sidecar, rid, model, messages)
        parts = sidecar.parts[rid]
        seen += parts
        if result["finishReason"] != "toolCalls":
            return parts, seen
        messages += as_copilot_history(parts)
    raise AssertionError("the loop never ended")


async def test_a_strict_provider_gets_its_reasoning_back_on_every_tool_turn(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    last, seen = await tool_loop(sidecar, "fake/reasoning", "strict")
    assert text_of(last) == f"Done after {STEPS} tool calls."
    bodies = [r["body"] for r in gateway.gateway.requests if r["path"].endswith("/responses")]
    assert all(b["include"] == ["reasoning.encrypted_content"] and b["store"] is False for b in bodies)
    final = bodies[-1]["input"]
    kinds = [item["type"] for item in final if item.get("type") != "message"]
    assert kinds == ["reasoning", "function_call", "function_call_output"] * STEPS  # each before its call
    assert final[1]["summary"] == [{"type": "summary_text", "text": "Step 1: I need the tool."}]
    # Never shown: the encrypted content is in no text and no thinking part.
    shown = [p["value"] for p in seen if p["type"] in ("text", "thinking")]
    assert not any(MARKER in value for value in shown)
    assert "Step 1: I need the tool." in "".join(p["value"] for p in seen if p["type"] == "thinking")


async def test_another_models_reasoning_is_never_sent(sidecar: Sidecar, gateway: FakeServer) -> None:
    # The first tool turn ran on fake/reasoning; the user then switched to fake/text (which reasons too).
    await chat(sidecar, "a0", "fake/reasoning", [user(STRICT)])
    history = [user("[scenario:echo] go on"), *as_copilot_history(sidecar.parts["a0"])]
    await chat(sidecar, "b0", "fake/text", history)
    switched = gateway.gateway.requests[-1]["body"]["input"]
    assert [i["type"] for i in switched if i.get("type") != "message"] == CALL_AND_OUTPUT
    assert any("reasoning" in message and "fake/reasoning" in message for _, message in sidecar.logs)
    # The same history on the model that produced it keeps its reasoning, in place.
    await chat(sidecar, "c0", "fake/reasoning", history)
    same = gateway.gateway.requests[-1]["body"]["input"]
    assert [i["type"] for i in same if i.get("type") != "message"] == ["reasoning", *CALL_AND_OUTPUT]


async def test_a_history_that_lost_its_reasoning_is_answered_after_one_retry(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    # An older host, a trimmed history or another model's turn: the thinking came back without its
    # reasoning, and the strict provider refuses the tool turn once. The turn is sent again with that
    # step's calls as text, the user gets the answer, the log says what happened; the model's later
    # requests go so at once (no second refusal).
    await chat(sidecar, "x0", "fake/reasoning", [user(STRICT)])
    history = as_copilot_history(sidecar.parts["x0"])
    history[0]["content"][0].pop("state", None)
    responses = lambda: [r for r in gateway.gateway.requests if r["path"].endswith("/responses")]  # noqa: E731
    result = await chat(sidecar, "x1", "fake/reasoning", [user(STRICT), *history])
    assert result["finishReason"] in ("stop", "toolCalls")  # answered: no error reached the user
    refused, resent = responses()[1]["body"]["input"], responses()[2]["body"]["input"]
    assert "function_call" in [i["type"] for i in refused]
    assert [i["type"] for i in resent] == ["message", "message", "message"]  # the call and result as text
    assert "[called the tool read_file" in json.dumps(resent)
    assert any("refused tool calls whose reasoning the history lost" in message for _, message in sidecar.logs)
    await chat(sidecar, "x2", "fake/reasoning", [user(STRICT), *history])
    assert len(responses()) == 4  # one request: sent as text at once, no second refusal


async def test_a_refusal_that_is_not_about_reasoning_is_not_retried(sidecar: Sidecar, gateway: FakeServer) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await chat(sidecar, "e0", "fake/reasoning", [user("[scenario:error-400] hi")])
    assert caught.value.data["kind"] == "bad_request"
    assert len([r for r in gateway.gateway.requests if r["path"].endswith("/responses")]) == 1


async def test_a_malformed_state_in_history_is_dropped_not_fatal(sidecar: Sidecar, gateway: FakeServer) -> None:
    bad = [
        {"model": 5, "items": []},
        {"model": "fake/reasoning", "items": [{"id": "rs_1", "encryptedContent": ""}]},
        {"model": "fake/reasoning", "items": "x"},
        "not an object",
    ]
    for n, state in enumerate(bad):
        thinking = {"type": "thinking", "value": "t", "id": "rs_1", "state": state}
        answer = {"role": 2, "name": None, "content": [thinking, {"type": "text", "value": "ok"}]}
        history = [user("[scenario:echo] hi"), answer]
        await sidecar.request("gateway/chat", {"requestId": f"m{n}", "model": "fake/reasoning", "messages": history})
        sent = gateway.gateway.requests[-1]["body"]["input"]
        assert all(item.get("type") != "reasoning" for item in sent)


async def test_a_tag_whose_head_nests_too_deep_is_no_tag_and_every_turn_is_answered(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    # A 5 KB tag whose head is a 2,000-deep JSON list: json.loads gives up with a RecursionError. The
    # tag stays in the conversation, so each later turn sends it back; each must still be answered.
    deep = base64.urlsafe_b64encode(b"[" * 2000 + b"]" * 2000).decode().rstrip("=")
    thinking = {"type": "thinking", "value": "t", "id": "rs_deep", "tagged": f"{TAG}.{deep}.enc"}
    history = [user("[scenario:echo] hi"), {"role": 2, "name": None, "content": [thinking, text("ok")]}]
    for turn in range(2):
        history.append(user(f"[scenario:echo] turn {turn}"))
        result = await chat(sidecar, f"deep{turn}", "fake/reasoning", history)
        assert result["finishReason"] == "stop"
        assert all(item.get("type") != "reasoning" for item in gateway.gateway.requests[-1]["body"]["input"])
        history.append({"role": 2, "name": None, "content": [text(text_of(sidecar.parts[f"deep{turn}"]))]})


# ---- the two halves on their own: the adapter's state, and where the items go back ----

FIXTURES = Path(__file__).parent / "fixtures/vercel-ai"
STEP1 = "openai-reasoning-summary-encrypted-multistep.step1.jsonl"


def replayed(name: str) -> list[PartOut]:
    parts: list[PartOut] = []
    adapt_stream(events_from_recording((FIXTURES / name).read_bytes()), parts, model="openai/gpt-5.1-codex-max")
    return parts


def test_a_recorded_reasoning_stream_hands_on_the_latest_encrypted_content() -> None:
    raw = [json.loads(line) for line in (FIXTURES / STEP1).read_text().splitlines() if line.strip()]
    # Each copy of the item carries another encryption of the same reasoning: the last one wins.
    done = next(e for e in raw if e["type"] == "response.completed")["response"]["output"][0]
    added = next(e["item"] for e in raw if e["type"] == "response.output_item.added")
    assert added["encrypted_content"] != done["encrypted_content"]
    parts = replayed(STEP1)
    states = [p for p in parts if p["type"] == "reasoningState"]
    assert [p["type"] for p in parts[-3:]] == ["reasoningState", "usage", "finish"]
    assert states == [
        {
            "type": "reasoningState",
            "model": "openai/gpt-5.1-codex-max",
            "items": [
                {
                    "id": done["id"],
                    "encryptedContent": done["encrypted_content"],
                    "summary": [s["text"] for s in done["summary"]],
                    "before": "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
                }
            ],
        }
    ]
    assert not any(done["encrypted_content"] in str(p.get("value")) for p in parts)


def test_no_state_without_encrypted_content() -> None:
    # GitHub Copilot's capture has `encrypted_content: null`; LM Studio sends none at all.
    for name in ("github-copilot-item-id-rotation.jsonl", "lmstudio-reasoning_text-and-function-call.jsonl"):
        assert not [p for p in replayed(name) if p["type"] == "reasoningState"], name


def state(model: str, *items: tuple[str, str | None]) -> dict[str, Any]:
    entries = [{"id": i, "encryptedContent": f"enc-{i}", "summary": [f"about {i}"], "before": b} for i, b in items]
    return {"model": model, "items": entries}


def thinking_with(value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "thinking", "value": "shown thinking", "id": "rs_x", "state": value}


def call(call_id: str) -> dict[str, Any]:
    return {"type": "toolCall", "callId": call_id, "name": "read", "input": {}}


def result(call_id: str) -> dict[str, Any]:
    return {"type": "toolResult", "callId": call_id, "content": [text("ok")]}


def test_reasoning_items_go_back_where_they_were() -> None:
    items = state("openai/gpt-5", ("rs_0", None), ("rs_1", "c1"), ("rs_2", "c2"), ("rs_9", "gone"))
    body = body_for(
        [
            msg(1, text("go")),
            msg(2, thinking_with(items), text("Reading both."), call("c1"), call("c2")),
            msg(1, result("c1"), result("c2")),
        ]
    )
    order = [i.get("id") or i.get("call_id") or i["type"] for i in body["input"][1:]]
    assert order == ["rs_0", "rs_9", "message", "rs_1", "c1", "c1", "rs_2", "c2", "c2"]
    assert body["input"][1] == {
        "type": "reasoning",
        "id": "rs_0",
        "encrypted_content": "enc-rs_0",
        "summary": [{"type": "summary_text", "text": "about rs_0"}],
    }
    assert body["include"] == ["reasoning.encrypted_content"]
    assert "shown thinking" not in json.dumps(body)  # history thinking text is still never sent
    assert_valid(body)


def test_other_models_reasoning_and_repeats_are_left_out() -> None:
    mine, theirs = state("openai/gpt-5", ("rs_1", "c1")), state("anthropic/claude-sonnet-4.5", ("rs_a", "c1"))
    body = body_for(
        [
            msg(1, text("go")),
            msg(2, thinking_with(theirs), thinking_with(mine), call("c1")),
            msg(1, result("c1")),
            msg(2, thinking_with(mine), text("again")),
        ]
    )
    assert [i.get("id") for i in body["input"] if i["type"] == "reasoning"] == ["rs_1"]
    assert "include" not in body_for([msg(1, text("hi"))])  # a model not known to reason, no reasoning


def test_each_item_names_the_call_after_it_and_oversized_items_stay_behind(caplog: pytest.LogCaptureFixture) -> None:
    def reasoning(index: int, item_id: str, encrypted: str) -> dict[str, Any]:
        item = {"type": "reasoning", "id": item_id, "encrypted_content": encrypted, "summary": []}
        return {"type": "response.output_item.done", "output_index": index, "item": item}

    def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
        return {"type": "response.output_item.added", "output_index": index, "item": item}

    events = [
        reasoning(0, "rs_a", "A"),
        added(1, {"type": "message", "id": "msg_1"}),
        reasoning(2, "rs_b", "B"),
        reasoning(3, "rs_c", "C"),
        added(4, {"type": "function_call", "call_id": "c1", "name": "read"}),
        reasoning(5, "rs_big", "x" * (MAX_ENCRYPTED + 1)),
        {"type": "response.completed", "response": {"id": "r", "output": []}},
    ]
    parts: list[PartOut] = []
    adapt_stream(events, parts, model="openai/gpt-5")
    (state,) = [p for p in parts if p["type"] == "reasoningState"]
    assert [(i["id"], i["before"]) for i in state["items"]] == [("rs_a", None), ("rs_b", "c1"), ("rs_c", "c1")]
    assert "1 reasoning items were too large or too many" in caplog.text


# ---- the harness's form: one tagged item per thinking part, in messages of their own ----


def test_each_item_leaves_tagged_when_it_is_done_and_late_ones_name_their_call() -> None:
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_a", "type": "reasoning"}},
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Hm"},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"id": "rs_a", "type": "reasoning", "encrypted_content": "A", "summary": []},
        },
        {"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "c1"}},
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        },
        {"type": "response.output_item.added", "output_index": 2, "item": {"id": "rs_b", "type": "reasoning"}},
        {"type": "response.output_item.added", "output_index": 3, "item": {"type": "function_call", "call_id": "c2"}},
        {
            "type": "response.completed",
            "response": {
                "id": "r",
                "output": [
                    {"id": "rs_a", "type": "reasoning", "encrypted_content": "A", "summary": []},
                    {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
                    {"id": "rs_b", "type": "reasoning", "encrypted_content": "B", "summary": []},
                    {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{}"},
                ],
            },
        },
    ]
    parts: list[PartOut] = []
    adapt_stream(events, parts, model="openai/gpt-5")
    kinds = [p["type"] if p["type"] != "toolCall" else p["callId"] for p in parts]
    # rs_a right after its thinking and before its call; rs_b's content came only at the end.
    assert kinds == ["thinking", "reasoningItem", "c1", "c2", "reasoningItem", "reasoningState", "finish"]
    items = [p for p in parts if p["type"] == "reasoningItem"]
    assert [untag(p["tagged"]) for p in items] == [
        ("openai/gpt-5", {"id": "rs_a", "encryptedContent": "A", "summary": [], "before": None}),
        ("openai/gpt-5", {"id": "rs_b", "encryptedContent": "B", "summary": [], "before": "c2"}),
    ]


def bridged(tagged: str, item_id: str = "rs_x") -> dict[str, Any]:
    """A reasoning item as the harness's bridge hands it back: its own assistant message."""
    return msg(2, {"type": "thinking", "value": ["shown ", "thinking"], "id": item_id, "tagged": tagged})


def tagged(model: str, item_id: str, before: str | None = None, summary: list[str] | None = None) -> str:
    item: ReasoningItem = {"id": item_id, "encryptedContent": f"enc-{item_id}", "summary": summary or []}
    item["before"] = before
    return tag(model, item)


def test_the_harness_history_gets_each_item_back_before_its_call() -> None:
    # One message per item, as the bridge rebuilds them; the bridge renamed an id that does not start
    # with "rs" (rs_byok_…): the tag keeps the provider's.
    body = body_for(
        [
            msg(1, text("go")),
            bridged(tagged("openai/gpt-5", "rs_1", summary=["about rs_1"]), "rs_1"),
            msg(2, call("c1")),
            msg(2, call("c2")),
            msg(1, result("c1")),
            msg(1, result("c2")),
            bridged(tagged("openai/gpt-5", "item_2"), "rs_byok_17"),
            msg(2, call("c3")),
            msg(1, result("c3")),
            bridged(tagged("openai/gpt-5", "rs_late", before="c4")),
            msg(2, call("c4")),  # a late item, handed on after the call it names
            msg(1, result("c4")),
            msg(2, text("Done.")),
        ]
    )
    order = [i.get("id") or i.get("call_id") or i["type"] for i in body["input"][1:]]
    assert order == ["rs_1", "c1", "c1", "c2", "c2", "item_2", "c3", "c3", "rs_late", "c4", "c4", "message"]
    assert body["input"][1] == {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": "enc-rs_1",
        "summary": [{"type": "summary_text", "text": "about rs_1"}],
    }
    assert "shown thinking" not in json.dumps(body)
    assert_valid(body)


def test_the_harness_form_is_read_as_untrusted_and_for_its_model_only() -> None:
    body = body_for(
        [
            msg(1, text("go")),
            bridged(tagged("anthropic/claude-sonnet-4.5", "rs_a")),  # another model's
            bridged("gAAAAB-not-ours"),  # another provider's encrypted content, untagged
            bridged("aigw1.!!!.x"),  # a tag that does not read
            bridged("aigw1." + "e30" + ".x"),  # {} : no model, no id
            bridged(tagged("openai/gpt-5", "rs_1")),
            msg(2, call("c1")),
            msg(1, result("c1")),
            msg(2, {"type": "thinking", "value": "", "id": "rs_1", "tagged": tagged("openai/gpt-5", "rs_1")}),
        ]
    )
    assert [i.get("id") for i in body["input"] if i["type"] == "reasoning"] == ["rs_1"]  # once
    # A tagged text over the bound is dropped, not the request.
    big = "aigw1.e30." + "x" * (MAX_TAGGED + 1)
    assert [i["type"] for i in body_for([msg(1, text("go")), bridged(big), msg(2, text("ok"))])["input"]] == [
        "message",
        "message",
    ]


def test_a_step_without_its_reasoning_goes_as_text_only_when_asked() -> None:
    history = [
        msg(1, text("go")),
        msg(2, call("c1")),  # lost its reasoning
        msg(1, result("c1")),
        bridged(tagged("openai/gpt-5", "rs_2")),
        msg(2, call("c2")),
        msg(1, result("c2")),
    ]
    kept = [i["type"] for i in body_for(history)["input"]]
    assert kept == ["message", *CALL_AND_OUTPUT, "reasoning", *CALL_AND_OUTPUT]
    request = ChatRequest.model_validate({"model": "openai/gpt-5", "messages": history})
    text_body = build_request(request, Settings(), ToolNameMap([]), unreasoned_as_text=True)
    assert [i["type"] for i in text_body["input"]] == [
        "message",
        "message",
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]


# How providers refuse a tool call whose reasoning the history lost, in their own words (issue
# trackers quoting the providers' 400s: anomalyco/opencode#3077, mastra-ai/mastra#8738,
# manthanabc/paws#103, abhigyanpatwari/GitNexus#43, crewAIInc/crewAI#5878, iOfficeAI/AionUi#2746).
LOST_REASONING = [
    THINKING_MISSING.format(index=1) + " Please consult our documentation at https://docs.claude.com/en/docs/",
    "Item 'fc_0a03' of type 'function_call' was provided without its required 'reasoning' item: 'rs_0a03'.",
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work"
    " correctly, and missing thought_signature may lead to degraded model performance.",
    "Missing `reasoning_content` field in the assistant message at message index 2.",
    "The `reasoning_content` in the thinking mode must be passed back to the API.",
    "The `content[].thinking` in the thinking mode must be passed back to the API.",
    "thinking is enabled but reasoning_content is missing in assistant tool call message at index 2",
]
# Refusals that name thinking or reasoning for another reason (the first as issue 43 §2.3 met it, the
# others providers' own): sending the calls as text cannot help.
NOT_LOST_REASONING = [
    "temperature is not supported when a thinking block budget is set",
    "`max_tokens` must be greater than `thinking.budget_tokens`.",
    SIGNATURE_INVALID.format(index=1),
    "The encrypted content for item rs_1 could not be verified.",
    "Item 'rs_0c38' of type 'reasoning' was provided without its required following item.",
]


@pytest.mark.parametrize(
    ("words", "lost"), [(w, True) for w in LOST_REASONING] + [(w, False) for w in NOT_LOST_REASONING]
)
def test_only_a_refusal_for_lost_reasoning_is_told_as_one(words: str, lost: bool) -> None:
    # A match sends the request again with the calls as text and marks the model for the sidecar's
    # life (chats.ChatService._stream): a false one costs a request and every later turn's reasoning.
    error = error_from_response(
        400, json.dumps({"error": {"message": words, "type": "invalid_request_error"}}).encode()
    )
    assert refuses_lost_reasoning(error) is lost
