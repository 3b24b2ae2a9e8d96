"""The fake gateway's `strict-reasoning` scenario: a provider that needs its reasoning back.

Anthropic with extended thinking, Gemini 3 with thought signatures and OpenAI's reasoning models with
`store: false` answer a tool-result turn with a 400 when the reasoning that preceded the call is not
in the input, or when it came from another model. This scenario does the same:
- a turn with fewer than `STEPS` tool results: a reasoning item (summary deltas; `encrypted_content`
  only in `output_item.done`, and only when the request asks for it with `include`, as OpenAI does
  with `store: false`), then one call: of the editor's read-file tool on PATH for
  `strict-reasoning:PATH` (a real VS Code), else of the first tool offered;
- then a text answer (quoting the last tool result when a PATH was given);
- every request is checked first: a `function_call` this scenario issued must come right after the
  reasoning item that preceded it, and every reasoning item must carry encrypted content made for the
  request's model; otherwise 400.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_gateway import Handler

STEPS = 2
CALL_PREFIX = "call_strict_"
INCLUDE = "reasoning.encrypted_content"
# Part of every encrypted blob, so tests can tell it never reaches a text part.
MARKER = "OPAQUE-REASONING"


def encrypted_for(model: str, call_id: str) -> str:
    payload = json.dumps({"model": model, "call": call_id}).encode()
    return f"{MARKER}.{base64.urlsafe_b64encode(payload).decode()}"


def decoded(blob: Any) -> dict[str, Any] | None:
    if not isinstance(blob, str) or not blob.startswith(MARKER + "."):
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(blob.removeprefix(MARKER + ".")))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def rejection(body: dict[str, Any]) -> str | None:
    """Why a strict provider refuses this input, or None."""
    model = str(body.get("model"))
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    for index, item in enumerate(items):
        if item.get("type") == "reasoning":
            secret = decoded(item.get("encrypted_content"))
            if secret is None or secret.get("model") != model:
                return f"The encrypted content for item {item.get('id')} could not be verified."
        call_id = str(item.get("call_id"))
        if item.get("type") == "function_call" and call_id.startswith(CALL_PREFIX):
            before = items[index - 1] if index else {}
            secret = decoded(before.get("encrypted_content")) if before.get("type") == "reasoning" else None
            if secret is None or secret.get("call") != call_id:
                return f"reasoning item missing: function_call {call_id} must follow the reasoning that preceded it"
    return None


def serve_strict_reasoning(
    h: Handler, scenario: str, body: dict[str, Any], entry: dict[str, Any], created: dict[str, Any]
) -> None:
    from fake_gateway import call_events, completed, fill_arguments, text_events, tool_outputs

    problem = rejection(body)
    if problem is not None:
        h._json(400, {"error": {"message": problem, "type": "invalid_request_error"}})
        return
    h._start_stream()
    path = scenario.partition(":")[2]
    outputs = tool_outputs(body)
    step = len(outputs)
    if step >= STEPS:
        quote = f" The tool said: {outputs[-1][:200]}" if path else ""
        h._send(entry, [created, *text_events([f"Done after {step} tool calls.", quote]), completed()])
        return
    call_id = f"{CALL_PREFIX}{step + 1}"
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    reader = next((t for t in tools if "read" in str(t.get("name")) and "file" in str(t.get("name"))), None)
    tool = (reader if path else None) or (tools[0] if tools else {"name": "get_weather"})
    arguments = fill_arguments(tool.get("parameters") or {}, path) if path else {"step": step + 1}
    encrypted = encrypted_for(str(body.get("model")), call_id) if INCLUDE in (body.get("include") or []) else None
    h._send(entry, [created, *reasoning_events(f"rs_strict_{step + 1}", step, encrypted)])
    h._send(entry, [*call_events(call_id, str(tool.get("name")), json.dumps(arguments), 1), completed()])


def reasoning_events(item_id: str, step: int, encrypted: str | None) -> list[dict[str, Any]]:
    summary = f"Step {step + 1}: I need the tool."
    done: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": summary}]}
    if encrypted is not None:
        done["encrypted_content"] = encrypted
    delta = {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0}
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": {"id": item_id, "type": "reasoning"}},
        {**delta, "item_id": item_id, "delta": summary[:8]},
        {**delta, "item_id": item_id, "delta": summary[8:]},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    ]
