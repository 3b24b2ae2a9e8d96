"""VS Code messages (as the extension serialises them) → an OpenResponses request body.

Rules that keep providers from rejecting the request:
- every `function_call` is followed at once by its `function_call_output` (a cancelled call gets
  a synthesised output), so the pairing providers require always holds;
- a result whose call is not in the history is kept as user text, never dropped;
- Copilot's internal data parts and history thinking text never reach the model; the encrypted
  reasoning that came back with it does, as `reasoning` items, and only to the model that made it
  (reasoning.py). Where its `cache_control` markers were is kept beside the items (`Conversation.marked`,
  rfcs/0011-prompt-cache.md), never in them.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from typing import Any, NamedTuple

from ..messages import (
    ROLE_ASSISTANT,
    ROLE_SYSTEM,
    TOOL_MODE_REQUIRED,
    ChatRequest,
    DataIn,
    MessageIn,
    TextIn,
    ToolCallIn,
    ToolResultIn,
)
from ..reasoning import HistoryReasoning
from ..toolnames import ToolNameMap

log = logging.getLogger(__name__)
CANCELLED_OUTPUT = "Tool call cancelled by the user: the tool did not run."
EMPTY_OUTPUT = "(the tool returned no output)"
# Copilot's conversation-compaction requests: the full form's system prompt, and how the last user
# message of the simple form and of the background ("inline") form begins. The background form keeps
# the agent's system prompt and every tool.
SUMMARY_SYSTEM_MARKER = "create a comprehensive, detailed summary"
SUMMARY_USER_MARKERS = (
    "summarize the conversation history",
    "the conversation has grown too large for the context window and must be compacted now",
)
_TEXT_DATA_TYPES = ("text/", "application/json")
# The data part Copilot marks a cache breakpoint with (its data: `ephemeral`), after the part it ends.
CACHE_MARKER = "cache_control"

Item = dict[str, Any]


class Conversation(NamedTuple):
    body: dict[str, Any]
    marked: list[int]  # the indices of `body["input"]` that ended at one of Copilot's cache markers


def conversation(request: ChatRequest, names: ToolNameMap, unreasoned_as_text: bool = False) -> Conversation:
    """The conversation as a request body: the model, the history as items, the system prompt as
    instructions, and the tools (in name order: the same set of tools is the same bytes, whatever
    order a caller lists them in, rfcs/0011). Every per-model field goes over it in body.py.
    `unreasoned_as_text`: the tool calls of a step whose reasoning the history lost go as text (for a
    model that refuses them otherwise)."""
    ends: set[int] = set()
    body: dict[str, Any] = {
        "model": request.model,
        "input": translate_messages(request.messages, names, request.model, unreasoned_as_text, ends),
        "store": False,
        "stream": True,
    }
    instructions = collect_instructions(request.messages)
    if instructions:
        body["instructions"] = instructions
    if is_summarisation_turn(request.messages):
        # Models asked to summarise sometimes call tools instead, and Copilot loops; and the request
        # carries the whole history at the edge of the window, where the tool definitions (a third of
        # a 44K window for Copilot's 40) push it over. So it goes without tools, its calls and results
        # as text (Anthropic refuses tool calls in a history without their definitions).
        body["input"] = as_transcript(body["input"])
    elif request.tools:
        tools = sorted(request.tools, key=lambda tool: tool.name)
        body["tools"] = [translate_tool(tool.name, tool.description, tool.inputSchema, names) for tool in tools]
        body["tool_choice"] = "required" if request.toolMode == TOOL_MODE_REQUIRED else "auto"
    return Conversation(body, [index for index, item in enumerate(body["input"]) if id(item) in ends])


# How a tool result begins as text in a transcript; fit.py clears such a result as it clears a
# `function_call_output`, so a summary request too can be fitted to the model's limit.
TRANSCRIBED = re.compile(r"\[the tool [^\]\n]{0,200} returned\]\n")


def transcribed_header(name: str) -> str:
    return f"[the tool {name} returned]\n"


def as_transcript(items: list[Item]) -> list[Item]:
    """A history for a request without tools: each call and its result as text, reasoning left out."""
    names = {i["call_id"]: i["name"] for i in items if i["type"] == "function_call"}
    transcript: list[Item] = []
    for item in items:
        if item["type"] == "function_call":
            text = f"[called the tool {item['name']} with {item['arguments']}]"
            transcript.append(
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
            )
        elif item["type"] == "function_call_output":
            output = item["output"]
            result = (
                output
                if isinstance(output, str)
                else "\n".join(str(p.get("text", "")) for p in output if p.get("type") == "input_text")
            )
            text = f"{transcribed_header(names.get(item['call_id'], 'call'))}{result}"
            transcript.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        elif item["type"] == "message":
            transcript.append(item)
    return transcript


def translate_tool(name: str, description: str, schema: dict[str, Any] | None, names: ToolNameMap) -> Item:
    # The schema passes through untouched: `$schema`, `$ref`, `$defs` are the tool author's.
    return {
        "type": "function",
        "name": names.to_wire(name),
        "description": description,
        "parameters": schema if schema is not None else {"type": "object", "properties": {}},
        "strict": False,
    }


def is_summarisation_turn(messages: list[MessageIn]) -> bool:
    """Copilot's "compacting conversation" request (rfcs/0004-token-accounting.md)."""
    if any(m.role == ROLE_SYSTEM and SUMMARY_SYSTEM_MARKER in _joined_text(m).lower() for m in messages):
        return True
    last_user = next((m for m in reversed(messages) if m.role not in (ROLE_SYSTEM, ROLE_ASSISTANT)), None)
    return last_user is not None and _joined_text(last_user).lstrip().lower().startswith(SUMMARY_USER_MARKERS)


def collect_instructions(messages: list[MessageIn]) -> str:
    texts = [_joined_text(m) for m in messages if m.role == ROLE_SYSTEM]
    return "\n\n".join(t for t in texts if t)


def translate_messages(
    messages: list[MessageIn],
    names: ToolNameMap,
    model: str = "",
    unreasoned_as_text: bool = False,
    marked: set[int] | None = None,
) -> list[Item]:
    """`unreasoned_as_text`: a step (a run of assistant messages: one response) whose calls have no
    reasoning before them goes as a transcript (rfcs/0002, "A history that lost its reasoning").
    `marked`: gets the `id` of each item that ends where Copilot put a cache marker: a message's
    last item for a marker among its parts, a call's output for one inside its result (the items
    are in the list returned: their ids hold while it does)."""
    marks: set[int] = set() if marked is None else marked
    results = {part.callId: part for m in messages for part in m.content if isinstance(part, ToolResultIn)}
    marked_calls = {callId for callId, result in results.items() if any(is_cache_marker(p) for p in result.content)}
    called = {
        part.callId for m in messages if m.role == ROLE_ASSISTANT for part in m.content if isinstance(part, ToolCallIn)
    }
    reasoning = HistoryReasoning(messages, model)
    items: list[Item] = []
    step: list[Item] = []  # the items of the current run of assistant messages
    for index, message in enumerate(messages):
        if message.role == ROLE_SYSTEM:
            continue
        if message.role == ROLE_ASSISTANT:
            step.extend(assistant_items(message, results, names, (reasoning.first.get(index, []), reasoning.before)))
            if marked_calls:
                outputs = (i for i in step if i["type"] == "function_call_output")
                marks.update(id(i) for i in outputs if i["call_id"] in marked_calls)
            if step and any(is_cache_marker(part) for part in message.content):
                marks.add(id(step[-1]))
            continue
        items.extend(_step(step, unreasoned_as_text))
        step = []
        items.extend(user_items(message, called))
        if any(is_cache_marker(part) for part in message.content) or any(
            isinstance(part, ToolResultIn) and part.callId in marked_calls and part.callId not in called
            for part in message.content
        ):
            # a message of tool results alone ends with the step before it: its outputs are there
            if items:
                marks.add(id(items[-1]))
    items.extend(_step(step, unreasoned_as_text))
    return items


def is_cache_marker(part: Any) -> bool:
    """Copilot's cache breakpoint: a data part of mime type `cache_control`, which is not content."""
    return isinstance(part, DataIn) and part.mimeType.lower() == CACHE_MARKER


def _step(items: list[Item], unreasoned_as_text: bool) -> list[Item]:
    if not unreasoned_as_text or any(i["type"] == "reasoning" for i in items):
        return items
    if not any(i["type"] == "function_call" for i in items):
        return items
    return as_transcript(items)


def assistant_items(
    message: MessageIn,
    results: dict[str, ToolResultIn],
    names: ToolNameMap,
    reasoning: tuple[list[Item], dict[str, list[Item]]] = ([], {}),
) -> list[Item]:
    """The message's text, then each call with its output; its reasoning where it was: each item
    right before the call that followed it, the others first (a message or nothing followed them)."""
    first, before = reasoning
    items: list[Item] = list(first)
    text = _joined_text(message)
    if text:
        items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
    for part in message.content:
        if isinstance(part, ToolCallIn):
            items.extend(before.pop(part.callId, ()))  # once, were a call id repeated
            items.append(function_call_item(part, names))
            result = results.get(part.callId)
            output = function_output(result) if result is not None else CANCELLED_OUTPUT
            items.append({"type": "function_call_output", "call_id": part.callId, "output": output})
    return items


def function_call_item(part: ToolCallIn, names: ToolNameMap) -> Item:
    arguments = part.input if part.input is not None else {}
    return {
        "type": "function_call",
        "call_id": part.callId,
        "name": names.to_wire(part.name),
        "arguments": json.dumps(arguments, ensure_ascii=False),
    }


def function_output(result: ToolResultIn) -> str | list[Item]:
    content = _content_items(result.content)
    if any(c["type"] == "input_image" for c in content):
        return content
    text = "".join(c["text"] for c in content)
    return text or EMPTY_OUTPUT


def user_items(message: MessageIn, called: set[str]) -> list[Item]:
    content: list[Item] = []
    for part in message.content:
        if isinstance(part, ToolResultIn):
            if part.callId not in called:
                content.extend(orphan_result(part))
        else:
            content.extend(_content_items([part]))
    if not content:
        return []
    return [{"type": "message", "role": "user", "content": content}]


def orphan_result(part: ToolResultIn) -> list[Item]:
    # The call was lost from history (trimmed, or another provider's): keep what the tool said.
    header = {"type": "input_text", "text": f"[Result of tool call {part.callId}]\n"}
    return [header, *_content_items(part.content)]


def _content_items(parts: list[Any]) -> list[Item]:
    items: list[Item] = []
    for part in parts:
        if isinstance(part, TextIn) and part.value:
            items.append({"type": "input_text", "text": part.value})
        elif isinstance(part, DataIn):
            item = data_item(part)
            if item is not None:
                items.append(item)
    return items


def data_item(part: DataIn) -> Item | None:
    """An image or text payload; Copilot's internal markers (`cache_control`, …) give None."""
    mime = part.mimeType.lower()
    if not (mime.startswith("image/") or mime.startswith(_TEXT_DATA_TYPES)):
        return None
    try:
        raw = base64.b64decode(part.data, validate=False)
    except (binascii.Error, ValueError):
        return None
    if mime.startswith("image/"):
        sniffed = sniff_image_type(raw)
        if sniffed is None:
            return None
        encoded = base64.b64encode(raw).decode("ascii")
        return {"type": "input_image", "image_url": f"data:{sniffed};base64,{encoded}", "detail": "auto"}
    text = raw.decode("utf-8", errors="replace")
    return {"type": "input_text", "text": text} if text else None


def _joined_text(message: MessageIn) -> str:
    return "".join(part.value for part in message.content if isinstance(part, TextIn))


# Image MIME types from the bytes themselves: VS Code may say `image/*`, which providers reject.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image_type(data: bytes) -> str | None:
    for magic, mime in _SIGNATURES:
        if data.startswith(magic):
            return mime
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None
