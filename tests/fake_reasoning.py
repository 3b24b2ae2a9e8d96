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


# What OpenAI answers when a call comes without the reasoning item that preceded it (mastra-ai/mastra#8738).
LOST = "Item '{call}' of type 'function_call' was provided without its required 'reasoning' item."


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
                return LOST.format(call=call_id)
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


# ---- `reasoning-agent`: a multi-turn agent on a strict reasoning model (tests/ts/bridge.test.ts) ----
#
# `fake/reasoning-agent` (listed under a base URL with `/agents/` in its path), or
# `[scenario:reasoning-agent[:OPTION…]]` in the user's message. Per user turn (the tool results after the
# last message the user typed): `STEPS` tool calls, each preceded by a reasoning item whose encrypted
# content names the model and the call, then a text answer. A request that turns reasoning off
# (`thinking_off`: no `include` of the encrypted reasoning among them) is neither checked nor reasoned
# about. Every request is checked first, as Anthropic with extended thinking checks it: the current
# turn's calls must each follow their reasoning, and every reasoning item sent must verify; otherwise a
# 400 in Anthropic's words. Options (`:`-separated): `lenient` (no check: a model that does not need its
# reasoning back), `custom` (call the freeform tool, the one whose schema is `{input: string}`, with a
# patch), `slow` (a pause between events, for cancelling mid-stream).

AGENT_MODEL = {
    "id": "fake/reasoning-agent",
    "name": "Fake Reasoning Agent (strict)",
    "type": "language",
    "owned_by": "fake",
    "context_window": 200000,
    "max_tokens": 32000,
    "tags": ["tool-use", "reasoning"],
    "reasoning_options": {"efforts": ["low", "medium", "high"], "default": "medium"},
}
AGENT_CALL_PREFIX = CALL_PREFIX + "t"  # call_strict_t<turn>_<step>: rejection() checks them
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+Hello from the patch\n*** End Patch\n"
AGENT_GAP = 0.15  # seconds between events with `slow`
# What Anthropic answers when the reasoning before a tool call is missing (through the gateway).
THINKING_MISSING = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost "
    "set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To "
    "avoid this requirement, disable `thinking`."
)
SIGNATURE_INVALID = "messages.{index}.content.0: Invalid `signature` in `thinking` block"
# How a tool result reads when a client sends it as text (gateway_lm.request.translate: as_transcript, orphan_result):
# not a new user turn.
TRANSCRIPT_PREFIXES = ("[the tool ", "[Result of tool call ")


def _item_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def is_prompt(item: dict[str, Any]) -> bool:
    """A message the user typed (not a tool result written as text)."""
    return (
        item.get("type", "message") == "message"
        and item.get("role") == "user"
        and not _item_text(item).startswith(TRANSCRIPT_PREFIXES)
    )


def agent_turn(items: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """The user turn (1-based: the prompts so far) and the items after its prompt."""
    prompts = [index for index, item in enumerate(items) if is_prompt(item)]
    if not prompts:
        return 1, items
    return len(prompts), items[prompts[-1] + 1 :]


def agent_steps(current: list[dict[str, Any]]) -> int:
    """The tool results of the current turn, as items or as text."""
    return sum(
        1
        for item in current
        if item.get("type") in ("function_call_output", "custom_tool_call_output")
        or (item.get("role") == "user" and _item_text(item).startswith(TRANSCRIPT_PREFIXES))
    )


def _message_index(items: list[dict[str, Any]], position: int) -> int:
    """The index of the (Anthropic) message holding items[position]: consecutive items of one role are one."""
    index, role = -1, None
    for item in items[: position + 1]:
        kind = item.get("type", "message")
        this = item.get("role") if kind == "message" else ("user" if kind.endswith("_output") else "assistant")
        if this != role:
            index, role = index + 1, this
    return max(index, 0)


def agent_rejection(body: dict[str, Any]) -> str | None:
    """`rejection()` on the current turn (providers need the reasoning of the tool loop under way, not of
    earlier turns), and on every reasoning item sent; in Anthropic's words."""
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    _, current = agent_turn(items)
    offset = len(items) - len(current)
    problem = rejection({**body, "input": current}) or rejection(
        {**body, "input": [i for i in items if i.get("type") == "reasoning"]}
    )
    if problem is None:
        return None
    position = next(
        (
            offset + n
            for n, item in enumerate(current)
            if item.get("type") == "function_call" and str(item.get("call_id")) in problem
        ),
        0,
    )
    words = THINKING_MISSING if problem.startswith(LOST.partition("{")[0]) else SIGNATURE_INVALID
    return words.format(index=_message_index(items, position))


def _freeform(tool: dict[str, Any]) -> bool:
    schema = tool.get("parameters")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return (
        isinstance(properties, dict)
        and list(properties) == ["input"]
        and isinstance(properties["input"], dict)
        and properties["input"].get("type") == "string"
    )


def agent_usage(items: int, reasoning: int) -> dict[str, Any]:
    prompt = 800 + 40 * items
    return {
        "input_tokens": prompt,
        "output_tokens": 60,
        "total_tokens": prompt + 60,
        "input_tokens_details": {"cached_tokens": prompt // 2},
        "output_tokens_details": {"reasoning_tokens": reasoning},
    }


def thinking_off(body: dict[str, Any]) -> bool:
    """A request that turns the model's reasoning off (what Anthropic's 400 advises: "disable `thinking`"):
    no `include` of the encrypted reasoning, `reasoning` with effort "none" or `enabled: false`, or
    Anthropic's provider option `thinking: {type: "disabled"}`. The model then neither checks nor reasons."""
    reasoning = body.get("reasoning")
    options = body.get("providerOptions")
    anthropic = options.get("anthropic") if isinstance(options, dict) else None
    thinking = anthropic.get("thinking") if isinstance(anthropic, dict) else None
    return (
        INCLUDE not in (body.get("include") or [])
        or (isinstance(reasoning, dict) and (reasoning.get("effort") == "none" or reasoning.get("enabled") is False))
        or (isinstance(thinking, dict) and thinking.get("type") == "disabled")
    )


def serve_reasoning_agent(
    h: Handler, scenario: str, body: dict[str, Any], entry: dict[str, Any], created: dict[str, Any]
) -> None:
    from fake_gateway import call_events, fill_arguments, response_obj, text_events

    options = set(scenario.split(":")[1:])
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    turn, current = agent_turn(items)
    step = agent_steps(current)
    off = thinking_off(body)
    entry.update(turn=turn, step=step, thinking="off" if off else "on")
    problem = None if "lenient" in options or off else agent_rejection(body)
    if problem is not None:
        entry.update(status=400, rejected=problem)
        h._json(400, {"error": {"message": problem, "type": "invalid_request_error"}})
        return
    entry["status"] = 200
    h._start_stream()
    gap = AGENT_GAP if "slow" in options else 0.0

    def completed(reasoning: int) -> dict[str, Any]:
        return {
            "type": "response.completed",
            "response": response_obj("completed", usage=agent_usage(len(items), reasoning)),
        }

    if step >= STEPS:
        h._send(entry, [created, *text_events([f"Turn {turn}: done", f" after {step} tool calls."]), completed(8)], gap)
        return
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    freeform = next((t for t in tools if _freeform(t)), None)
    functions = [t for t in tools if not _freeform(t)]
    if "custom" in options and freeform is not None:
        tool, arguments = freeform, {"input": PATCH}
    else:
        tool = functions[0] if functions else (tools[0] if tools else {"name": "get_weather"})
        arguments = fill_arguments(tool.get("parameters") or {}, f"turn-{turn}-step-{step + 1}.txt")
    call_id = f"{AGENT_CALL_PREFIX}{turn}_{step + 1}"
    encrypted = encrypted_for(str(body.get("model")), call_id)
    events = [created, *([] if off else reasoning_events(f"rs_agent_t{turn}_{step + 1}", step, encrypted))]
    events += [*call_events(call_id, str(tool.get("name")), json.dumps(arguments), 1), completed(40)]
    h._send(entry, events, gap)
