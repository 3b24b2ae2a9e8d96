"""VS Code messages → OpenResponses request bodies, one test per translation rule."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from gateway_lm.messages import ChatRequest
from gateway_lm.request.body import build_request
from gateway_lm.request.translate import CANCELLED_OUTPUT
from gateway_lm.settings import Settings
from gateway_lm.toolnames import ToolNameMap

SPEC = json.loads((Path(__file__).parent / "fixtures/openresponses-spec/openapi-2026-04-24.json").read_text())
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16
GIF = b"GIF89a" + b"\x00" * 16
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 8


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "value": value}


def data(raw: bytes, mime: str) -> dict[str, Any]:
    return {"type": "data", "mimeType": mime, "data": base64.b64encode(raw).decode()}


def msg(role: int, *content: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "name": None, "content": list(content)}


def body_for(messages: list[dict[str, Any]], settings: Settings | None = None, **extra: Any) -> dict[str, Any]:
    request = ChatRequest.model_validate({"model": "openai/gpt-5", "messages": messages, **extra})
    names = ToolNameMap([t.name for t in request.tools])
    return build_request(request, settings or Settings(), names)


def assert_valid(body: dict[str, Any]) -> None:
    """Validates against CreateResponseBody; `providerOptions` is the gateway's documented extension."""
    registry: Registry[Any] = Registry().with_resource(
        "urn:spec",
        Resource.from_contents(
            SPEC, default_specification=__import__("referencing.jsonschema", fromlist=["DRAFT202012"]).DRAFT202012
        ),
    )
    schema = {"$ref": "urn:spec#/components/schemas/CreateResponseBody"}
    standard = {k: v for k, v in body.items() if k != "providerOptions"}
    errors = list(Draft202012Validator(schema, registry=registry).iter_errors(standard))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors]


def test_system_messages_become_instructions() -> None:
    body = body_for([msg(3, text("Be brief.")), msg(1, text("hi")), msg(3, text("Use tools."))])
    assert body["instructions"] == "Be brief.\n\nUse tools."
    assert body["input"] == [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    assert body["store"] is False and body["stream"] is True
    assert_valid(body)


def test_tool_call_and_result_pair_with_same_call_id_in_order() -> None:
    body = body_for(
        [
            msg(1, text("read it")),
            msg(2, text("Reading."), {"type": "toolCall", "callId": "c1", "name": "read", "input": {"p": "a"}}),
            msg(1, {"type": "toolResult", "callId": "c1", "content": [text("file body")]}, text("thanks")),
        ]
    )
    kinds = [(i["type"], i.get("role")) for i in body["input"]]
    assert kinds == [
        ("message", "user"),
        ("message", "assistant"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "user"),
    ]
    call, output = body["input"][2], body["input"][3]
    assert call == {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"p": "a"}'}
    assert output == {"type": "function_call_output", "call_id": "c1", "output": "file body"}
    assert_valid(body)


def test_cancelled_call_gets_a_synthesised_output() -> None:
    body = body_for(
        [msg(2, {"type": "toolCall", "callId": "c9", "name": "run", "input": {}}), msg(1, text("never mind"))]
    )
    assert body["input"][1] == {"type": "function_call_output", "call_id": "c9", "output": CANCELLED_OUTPUT}
    assert_valid(body)


def test_result_without_call_is_kept_as_text() -> None:
    body = body_for([msg(1, {"type": "toolResult", "callId": "lost", "content": [text("42")]})])
    content = body["input"][0]["content"]
    assert "lost" in content[0]["text"] and content[1] == {"type": "input_text", "text": "42"}
    assert not any(i["type"].startswith("function_call") for i in body["input"])


@pytest.mark.parametrize(
    ("raw", "mime"), [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")]
)
def test_images_become_input_image_with_sniffed_type(raw: bytes, mime: str) -> None:
    body = body_for([msg(1, text("look"), data(raw, "image/*"))])
    image = body["input"][0]["content"][1]
    assert image["type"] == "input_image"
    assert image["image_url"] == f"data:{mime};base64,{base64.b64encode(raw).decode()}"
    assert_valid(body)


def test_images_inside_tool_results_are_kept() -> None:
    body = body_for(
        [
            msg(2, {"type": "toolCall", "callId": "s", "name": "screenshot", "input": {}}),
            msg(1, {"type": "toolResult", "callId": "s", "content": [text("here"), data(PNG, "image/png")]}),
        ]
    )
    output = body["input"][1]["output"]
    assert [c["type"] for c in output] == ["input_text", "input_image"]
    assert_valid(body)


def test_internal_data_parts_and_history_thinking_are_dropped() -> None:
    body = body_for(
        [
            msg(1, text("q"), data(b"ephemeral", "cache_control"), data(b"x", "stateful_marker")),
            msg(2, {"type": "thinking", "value": ["secret", "plan"], "id": "t1"}, text("answer")),
            msg(1, {"type": "futurePart", "value": "?"}, text("next")),
        ]
    )
    dumped = json.dumps(body)
    assert "ephemeral" not in dumped and "secret" not in dumped and "futurePart" not in dumped
    assert body["input"][0]["content"] == [{"type": "input_text", "text": "q"}]
    assert body["input"][1]["content"] == [{"type": "output_text", "text": "answer"}]


def test_invalid_tool_names_are_mapped_and_schemas_pass_through() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/X"}},
        "$defs": {"X": {"type": "string"}},
    }
    tools = [
        {"name": "mcp.server/read file", "description": "d", "inputSchema": schema},
        {"name": "mcp_server_read_file", "description": "", "inputSchema": None},
    ]
    body = body_for([msg(1, text("go"))], tools=tools, toolMode=2)
    names = [t["name"] for t in body["tools"]]
    assert names[1] == "mcp_server_read_file"
    assert names[0] != names[1] and all(len(n) <= 64 for n in names)
    assert body["tools"][0]["parameters"] == schema
    assert body["tool_choice"] == "required"
    assert_valid(body)


def test_long_tool_names_are_shortened_uniquely() -> None:
    names = ToolNameMap(["x" * 80 + "a", "x" * 80 + "b"])
    wires = {names.to_wire("x" * 80 + "a"), names.to_wire("x" * 80 + "b")}
    assert len(wires) == 2 and all(len(w) <= 64 for w in wires)
    assert names.from_wire(names.to_wire("x" * 80 + "b")) == "x" * 80 + "b"


def test_settings_shape_the_request() -> None:
    settings = Settings(
        reasoningEffort="low",
        reasoningEffortByModel={"openai/gpt-5": "high"},
        gatewayOrder=["bedrock"],
        gatewayOnly=["bedrock", "anthropic"],
        gatewayModels=["openai/gpt-5-mini"],
        maxOutputTokens=4000,
        modelOptions={"openai/*": {"extraBody": {"prompt_cache_key": "conv-1"}}},  # what replaced promptCacheKey
    )
    body = body_for([msg(1, text("hi"))], settings)
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["max_output_tokens"] == 4000
    assert body["prompt_cache_key"] == "conv-1"
    assert body["providerOptions"] == {
        "gateway": {"order": ["bedrock"], "only": ["bedrock", "anthropic"], "models": ["openai/gpt-5-mini"]}
    }
    assert_valid(body)


def test_no_tools_means_no_tool_fields() -> None:
    body = body_for([msg(1, text("hi"))])
    assert "tools" not in body and "tool_choice" not in body and "reasoning" not in body


def test_a_mixed_agent_history_validates() -> None:
    messages = [msg(3, text("sys"))]
    for n in range(5):
        messages.append(msg(1, text(f"q{n}"), data(JPEG, "image/jpeg")))
        messages.append(msg(2, {"type": "toolCall", "callId": f"c{n}", "name": "t", "input": {"n": n}}))
        messages.append(msg(1, {"type": "toolResult", "callId": f"c{n}", "content": [text("r")]}))
    body = body_for(messages, tools=[{"name": "t", "description": "", "inputSchema": {"type": "object"}}])
    assert_valid(body)


COMPACT_NOW = "The conversation has grown too large for the context window and must be compacted now.\n\nYour task…"
AGENT_TOOLS = [{"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}}]
AGENT_SYSTEM = msg(3, text("You are an expert AI programming assistant, working with a user in the VS Code editor."))
HISTORY = [
    msg(1, text("Fix the build")),
    msg(2, {"type": "toolCall", "callId": "c1", "name": "read_file", "input": {}}),
]
HISTORY.append(msg(1, {"type": "toolResult", "callId": "c1", "content": [text("contents")]}))


@pytest.mark.parametrize(
    ("form", "messages"),
    [
        # Copilot's three compaction requests (its SummarizedConversationHistory prompts): the simple
        # form, the full form (`/compact`), and the background form, which keeps the agent's
        # system prompt and every tool.
        ("simple", [*HISTORY, msg(1, text("Summarize the conversation history so far, paying special attention"))]),
        (
            "full",
            [
                msg(3, text("Your task is to create a comprehensive, detailed summary of the entire conversation")),
                *HISTORY,
            ],
        ),
        (
            "background",
            [
                AGENT_SYSTEM,
                *HISTORY,
                msg(
                    1,
                    text(COMPACT_NOW),
                ),
            ],
        ),
    ],
)
def test_every_compaction_request_goes_without_tools_its_history_as_text(form: str, messages: list[Any]) -> None:
    body = body_for(messages, tools=AGENT_TOOLS)
    assert "tools" not in body and "tool_choice" not in body, form
    assert all(i["type"] == "message" for i in body["input"]), "no call or result item without its definition"


def test_an_ordinary_agent_turn_may_call_tools() -> None:
    body = body_for([AGENT_SYSTEM, *HISTORY, msg(1, text("Now summarise what you changed"))], tools=AGENT_TOOLS)
    assert body["tool_choice"] == "auto"
