"""Copilot's summarisation requests, as the real host sent them (issue 12, part 1).

The fixtures in tests/fixtures/summarisation/ are requests captured at the fake gateway during the UI
e2e run's agent loop (tests/e2e/ui.mjs, `agent-loop-compacts`) in code-server 1.139 with Copilot Chat
0.67: the prompt text and tool names only (no key; tool outputs cut to 400 characters). Each is turned
back into the messages VS Code hands the provider, and must be recognised, with its tools withheld;
the agent's ordinary turns from the same run must not be.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway_lm.messages import ChatRequest, MessageIn
from gateway_lm.request.body import build_request
from gateway_lm.request.translate import is_summarisation_turn
from gateway_lm.settings import Settings
from gateway_lm.toolnames import ToolNameMap

FIXTURES = Path(__file__).parent / "fixtures" / "summarisation"
CAPTURED = sorted(FIXTURES.glob("*.json"))
ROLE_USER, ROLE_ASSISTANT, ROLE_SYSTEM = 1, 2, 3


def messages_of(captured: dict[str, Any]) -> list[MessageIn]:
    """The messages VS Code gave the provider, rebuilt from what reached the gateway."""
    messages: list[dict[str, Any]] = []
    if captured.get("instructions"):
        messages.append({"role": ROLE_SYSTEM, "content": [{"type": "text", "value": captured["instructions"]}]})
    for item in captured["input"]:
        kind = item.get("type", "message")
        if kind == "message":
            role = {"user": ROLE_USER, "assistant": ROLE_ASSISTANT, "system": ROLE_SYSTEM}[item["role"]]
            content = item["content"] if isinstance(item["content"], list) else [{"text": item["content"]}]
            messages.append({"role": role, "content": [{"type": "text", "value": p.get("text", "")} for p in content]})
        elif kind == "function_call":
            call = {
                "type": "toolCall",
                "callId": item["call_id"],
                "name": item["name"],
                "input": json.loads(item["arguments"]),
            }
            messages.append({"role": ROLE_ASSISTANT, "content": [call]})
        elif kind == "function_call_output":
            output = [{"type": "text", "value": str(item["output"])}]
            messages.append(
                {"role": ROLE_USER, "content": [{"type": "toolResult", "callId": item["call_id"], "content": output}]}
            )
    return [MessageIn.model_validate(m) for m in messages]


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_the_captures_hold_the_form_copilot_sent_and_ordinary_turns() -> None:
    # The run's agent loop drew the background form (the one that arrived with every tool callable
    # before issue 12), `/compact` after it the full form, and a turn that read three files at once
    # the simple form (Copilot's foreground summary; its log said "[simple] summarization prompt
    # rendered"; the fake gateway cannot tell simple from full, so the fixture was labelled by hand).
    forms = [load(p)["summarisation"] for p in CAPTURED]
    assert {"background", "full", "simple"} <= set(forms), f"captured forms: {forms}"
    assert forms.count(None) >= 2, "ordinary agent turns are captured too, as the negative case"


@pytest.mark.parametrize("path", CAPTURED, ids=[p.stem for p in CAPTURED])
def test_each_captured_request_is_recognised_or_not_as_copilot_meant(path: Path) -> None:
    captured = load(path)
    messages = messages_of(captured)
    assert is_summarisation_turn(messages) is (captured["summarisation"] is not None)
    tools = [{"name": name, "description": "", "inputSchema": {"type": "object"}} for name in captured["tools"]]
    request = ChatRequest.model_validate({"model": "fake/agent-loop", "messages": messages, "tools": tools})
    body = build_request(request, Settings(), ToolNameMap(captured["tools"]))
    if captured["summarisation"] is not None:
        assert "tools" not in body, "a summary turn goes without tools: it cannot call one"
        assert all(i["type"] == "message" for i in body["input"])
    elif captured["tools"]:
        assert body["tool_choice"] == "auto"
