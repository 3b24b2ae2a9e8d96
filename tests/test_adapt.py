"""The stream state machine against the pitfalls seen in real streams (rfcs/0002-stream-state-machine.md)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from gateway_lm.gateway.errors import GatewayError
from gateway_lm.messages import PartOut
from gateway_lm.stream.adapt import StreamAdapter, adapt_stream
from gateway_lm.stream.arguments import INVALID_KEY
from gateway_lm.toolnames import ToolNameMap

COMPLETED = {
    "type": "response.completed",
    "response": {"id": "resp_1", "usage": {"input_tokens": 5, "output_tokens": 2}},
}


def run(events: list[dict[str, Any]], names: ToolNameMap | None = None) -> list[PartOut]:
    parts: list[PartOut] = []
    adapt_stream(events, parts, names)
    return parts


def call_item(
    call_id: str = "call_1", name: str = "read", arguments: str = "", item_id: str = "fc_1"
) -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments}


def calls(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in parts if p["type"] == "toolCall"]


def test_text_is_emitted_per_delta_as_it_arrives() -> None:
    adapter = StreamAdapter()
    out = adapter.feed({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hel"})
    assert out == [{"type": "text", "value": "Hel"}]


def test_done_events_add_only_what_deltas_missed() -> None:
    parts = run(
        [
            {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hel"},
            {"type": "response.output_text.done", "output_index": 0, "content_index": 0, "text": "Hello"},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {"type": "message", "content": [{"type": "output_text", "text": "Hello"}]},
            },
            COMPLETED,
        ]
    )
    assert "".join(p["value"] for p in parts if p["type"] == "text") == "Hello"


def test_text_only_in_output_item_done_is_shown() -> None:
    parts = run(
        [
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {"type": "message", "content": [{"type": "output_text", "text": "Whole"}]},
            },
            COMPLETED,
        ]
    )
    assert parts[0] == {"type": "text", "value": "Whole"}


def test_duplicated_output_item_added_emits_the_call_once() -> None:
    item = call_item()
    parts = run(
        [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"p":'},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '"a"}'},
            {"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": '{"p":"a"}'}},
            {"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": '{"p":"a"}'}},
            COMPLETED,
        ]
    )
    assert calls(parts) == [{"type": "toolCall", "callId": "call_1", "name": "read", "input": {"p": "a"}}]
    assert parts[-1]["reason"] == "toolCalls"


def test_rotating_item_ids_are_correlated_by_output_index() -> None:
    parts = run(
        [
            {"type": "response.output_item.added", "output_index": 1, "item": call_item(item_id="a")},
            {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "b", "delta": '{"x":'},
            {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "c", "delta": "1}"},
            {
                "type": "response.function_call_arguments.done",
                "output_index": 1,
                "item_id": "d",
                "arguments": '{"x":1}',
            },
            {
                "type": "response.output_item.done",
                "output_index": 1,
                "item": {**call_item(item_id="e"), "arguments": ""},
            },
            COMPLETED,
        ]
    )
    assert calls(parts)[0]["input"] == {"x": 1}


def test_arguments_only_in_arguments_done() -> None:
    parts = run(
        [
            {"type": "response.output_item.added", "output_index": 0, "item": call_item()},
            {"type": "response.function_call_arguments.done", "output_index": 0, "arguments": '{"only":"done"}'},
            COMPLETED,
        ]
    )
    assert calls(parts)[0]["input"] == {"only": "done"}


def test_arguments_only_in_output_item_done() -> None:
    parts = run(
        [
            {"type": "response.output_item.done", "output_index": 0, "item": call_item(arguments='{"k":true}')},
            COMPLETED,
        ]
    )
    assert calls(parts)[0]["input"] == {"k": True}


def test_call_reported_only_in_the_terminal_response() -> None:
    completed = {"type": "response.completed", "response": {"output": [call_item(arguments='{"z":0}')]}}
    assert calls(run([completed]))[0]["input"] == {"z": 0}


def test_parallel_calls_interleaved_keep_their_arguments() -> None:
    parts = run(
        [
            {"type": "response.output_item.added", "output_index": 0, "item": call_item("c1", "a", item_id="i1")},
            {"type": "response.output_item.added", "output_index": 1, "item": call_item("c2", "b", item_id="i2")},
            {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": '{"n":2}'},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"n":1}'},
            COMPLETED,
        ]
    )
    assert [(c["callId"], c["input"]) for c in calls(parts)] == [("c1", {"n": 1}), ("c2", {"n": 2})]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", {}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('{"a": [1, 2,],}', {"a": [1, 2]}),
        ('{"a": 1}{"a": 1}', {"a": 1}),
        ('{"path": "/tmp/fi', {INVALID_KEY: '{"path": "/tmp/fi'}),
        ("[1, 2]", {INVALID_KEY: "[1, 2]"}),
    ],
)
def test_arguments_are_repaired_only_when_safe(raw: str, expected: dict[str, Any]) -> None:
    parts = run([{"type": "response.output_item.done", "output_index": 0, "item": call_item(arguments=raw)}, COMPLETED])
    assert calls(parts)[0]["input"] == expected


DEEP = '{"a":' * 5000 + "1" + "}" * 5000


@pytest.mark.parametrize(
    ("raw", "valid"),
    [
        (DEEP, False),  # deeper than Python's json reads: was a RecursionError that failed the turn
        ("```\n" + DEEP + "\n```", False),
        (DEEP + " junk", False),
        ('{"a":' * 200 + "1" + "}" * 200, True),
        ('{"a":' * 201 + "1" + "}" * 201, False),  # reads, but every later step recurses per level
        ('{"x": NaN}', False),
        ('{"x": -Infinity} tail', False),
    ],
)
def test_unsafe_arguments_are_passed_on_as_invalid(raw: str, valid: bool) -> None:
    parts = run([{"type": "response.output_item.done", "output_index": 0, "item": call_item(arguments=raw)}, COMPLETED])
    assert (calls(parts)[0]["input"] != {INVALID_KEY: raw}) is valid


def reasoning_items(count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(count):
        item = {"id": f"rs_{i}", "type": "reasoning"}
        done = {**item, "summary": [{"type": "summary_text", "text": "x"}]}
        events += [
            {"type": "response.output_item.added", "output_index": i, "item": item},
            {"type": "response.reasoning_summary_text.delta", "output_index": i, "summary_index": 0, "delta": "x"},
            {"type": "response.output_item.done", "output_index": i, "item": done},
        ]
    return events


def test_many_output_items_cost_linear_time() -> None:
    # Checking each reasoning item against every slot shown so far was quadratic (rfcs/0005,
    # "Measured costs"). Compared with 1,000 items in the same process, not against a fixed time (a
    # loaded machine is no regression): 8× the items cost about 8× when linear, 64× when quadratic.
    # Each size's quickest of three.
    def quickest(count: int) -> float:
        events = [*reasoning_items(count), COMPLETED]
        times = []
        for _ in range(3):
            started = time.perf_counter()
            parts = run(events)
            times.append(time.perf_counter() - started)
        assert len([p for p in parts if p["type"] == "thinking"]) == count
        return min(times)

    small, large = quickest(1000), quickest(8000)
    assert large / small < 24, f"8,000 items cost {large / small:.1f}× 1,000 items"


def test_mapped_tool_names_are_mapped_back() -> None:
    names = ToolNameMap(["mcp.server/read file"])
    wire = names.to_wire("mcp.server/read file")
    parts = run(
        [{"type": "response.output_item.done", "output_index": 0, "item": call_item(name=wire)}, COMPLETED], names
    )
    assert calls(parts)[0]["name"] == "mcp.server/read file"


@pytest.mark.parametrize(
    "event_type",
    ["response.reasoning.delta", "response.reasoning_text.delta", "response.reasoning_summary_text.delta"],
)
def test_every_reasoning_family_becomes_thinking(event_type: str) -> None:
    parts = run(
        [
            {"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1"}},
            {"type": event_type, "output_index": 0, "summary_index": 0, "content_index": 0, "delta": "hmm"},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hmm"}]},
            },
            COMPLETED,
        ]
    )
    assert [p for p in parts if p["type"] == "thinking"] == [{"type": "thinking", "value": "hmm", "id": "rs_1"}]


def test_reasoning_without_deltas_comes_from_the_done_item() -> None:
    item = {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "planned"}]}
    parts = run([{"type": "response.output_item.done", "output_index": 0, "item": item}, COMPLETED])
    assert parts[0] == {"type": "thinking", "value": "planned", "id": "rs_2"}


def test_refusal_reaches_the_user() -> None:
    parts = run([{"type": "response.refusal.delta", "output_index": 0, "content_index": 0, "delta": "No."}, COMPLETED])
    assert parts[0] == {"type": "text", "value": "No."}
    assert parts[-1]["reason"] == "refusal"


def test_unknown_events_and_garbage_are_ignored() -> None:
    parts = run(
        [
            {"type": "response.web_search_call.searching", "output_index": 0},
            {"type": "response.output_text.delta", "output_index": 0, "delta": None},
            {"no": "type"},
            "not even a dict",  # type: ignore[list-item]
            None,  # type: ignore[list-item]
            {"type": "response.output_text.delta", "output_index": "x", "delta": "ok"},
            COMPLETED,
        ]
    )
    assert [p["type"] for p in parts] == ["text", "usage", "finish"]


def test_stream_without_terminal_event_is_a_protocol_error() -> None:
    adapter = StreamAdapter()
    adapter.feed({"type": "response.output_text.delta", "output_index": 0, "delta": "partial"})
    with pytest.raises(GatewayError) as caught:
        adapter.end()
    assert caught.value.kind == "protocol"


def test_incomplete_maps_to_length_and_content_filter() -> None:
    for reason, expected in (("max_output_tokens", "length"), ("content_filter", "contentFilter")):
        event = {"type": "response.incomplete", "response": {"incomplete_details": {"reason": reason}}}
        assert run([event])[-1] == {"type": "finish", "reason": expected, "responseId": None}


def test_failed_after_error_event_raises_the_error_event_message() -> None:
    adapter = StreamAdapter()
    adapter.feed({"type": "error", "code": "context_length_exceeded", "message": "Input is too long"})
    with pytest.raises(GatewayError) as caught:
        adapter.feed({"type": "response.failed", "response": {"error": None}})
    assert caught.value.kind == "context_overflow"
    assert "Input is too long" in caught.value.message


def test_usage_part_has_every_field() -> None:
    usage = {
        "input_tokens": 100,
        "output_tokens": 20,
        "total_tokens": 120,
        "input_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 30},
        "output_tokens_details": {"reasoning_tokens": 8},
    }
    parts = run([{"type": "response.completed", "response": {"id": "r", "usage": usage}}])
    assert parts == [
        {
            "type": "usage",
            "inputTokens": 100,
            "outputTokens": 20,
            "totalTokens": 120,
            "cachedTokens": 40,
            "cacheWriteTokens": 30,
            "reasoningTokens": 8,
            "servedTier": "default",
        },
        {"type": "finish", "reason": "stop", "responseId": "r"},
    ]


@pytest.mark.parametrize(
    ("response", "served"),
    [
        ({"provider_metadata": {"gateway": {"serviceTier": "priority"}}}, "priority"),
        ({"providerMetadata": {"gateway": {"serviceTier": "fast"}}}, "priority"),  # the gateway's alias
        ({"service_tier": "flex"}, "flex"),  # OpenAI's own field
        ({"service_tier": "ultrafast", "provider_metadata": {"gateway": {"serviceTier": "ultrafast"}}}, "ultrafast"),
        ({"service_tier": "default"}, "default"),
        ({}, "default"),  # the gateway names no tier for the standard one
        ({"service_tier": "<b>warp</b>", "provider_metadata": {"gateway": {"serviceTier": 7}}}, "default"),
    ],
)
def test_the_usage_part_says_the_tier_that_served_the_response(response: dict[str, Any], served: str) -> None:
    usage = {"input_tokens": 10, "output_tokens": 2, "input_tokens_details": {"cache_write_tokens": 99}}
    parts = run([{"type": "response.completed", "response": {"id": "r", "usage": usage, **response}}])
    assert parts[0]["type"] == "usage"
    assert parts[0]["servedTier"] == served
    assert parts[0]["cacheWriteTokens"] == 10, "writes are input tokens: at most all of them"


def test_events_after_the_terminal_event_are_ignored() -> None:
    adapter = StreamAdapter()
    adapter.feed(COMPLETED)
    assert adapter.feed({"type": "response.output_text.delta", "output_index": 0, "delta": "late"}) == []
