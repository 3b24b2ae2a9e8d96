"""VS Code messages (as the extension serialises them) → an OpenResponses request body.

Rules that keep providers from rejecting the request:
- every `function_call` is followed at once by its `function_call_output` (a cancelled call gets
  a synthesised output), so the pairing providers require always holds;
- a result whose call is not in the history is kept as user text, never dropped;
- Copilot's internal data parts and history thinking text never reach the model; the encrypted
  reasoning that came back with it does, as `reasoning` items, and only to the model that made it
  (reasoning.py).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from typing import Any

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
from ..offer import speed
from ..offer.catalogue import ModelInfo
from ..offer.effort import MENU_KEY, Effort, by_rule, decide, level, nearest
from ..reasoning import HistoryReasoning
from ..settings import Settings, held_privacy
from ..toolnames import ToolNameMap
from . import options as model_options

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
ENCRYPTED_REASONING = "reasoning.encrypted_content"

Item = dict[str, Any]


def build_request(
    request: ChatRequest,
    settings: Settings,
    names: ToolNameMap,
    model: ModelInfo | None = None,
    unreasoned_as_text: bool = False,
) -> dict[str, Any]:
    """`model`: the catalogue's entry, None when the model is not in it. When it reasons, its
    encrypted reasoning is asked for (the gateway stores nothing with `store: false`), to hand back
    on the next tool turn (reasoning.py); models that do not reason refuse the `include`. Its
    reasoning effort is one it accepts (effort.py). `unreasoned_as_text`: the tool calls of a step
    whose reasoning the history lost go as text (for a model that refuses them otherwise)."""
    body: dict[str, Any] = {
        "model": request.model,
        "input": translate_messages(request.messages, names, request.model, unreasoned_as_text),
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
        body["tools"] = [translate_tool(tool.name, tool.description, tool.inputSchema, names) for tool in request.tools]
        body["tool_choice"] = "required" if request.toolMode == TOOL_MODE_REQUIRED else "auto"
    body.update(options_from_settings(settings))
    # The setting's options for this model, then the caller's, each over what came before (rfcs/0007).
    model_options.apply(body, model_options.for_model(request.model, settings.modelOptions))
    caller = model_options.from_caller(request.modelOptions)
    model_options.apply(body, caller)
    hold_privacy(body, settings)
    set_effort(body, request, settings, model, caller.reasoningEffort)
    set_speed(body, request, settings, model)
    reasons = model is not None and model.reasoning
    # Decided last: an extra body may have asked for reasoning too.
    if reasons or "reasoning" in body or any(i["type"] == "reasoning" for i in body["input"]):
        body["include"] = [ENCRYPTED_REASONING]
    return body


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


def set_effort(
    body: dict[str, Any], request: ChatRequest, settings: Settings, model: ModelInfo | None, caller: Effort | None
) -> None:
    """The reasoning effort, from the menu in the chat input, a caller or the settings, as one the
    model accepts; an effort an extra body set is held to the same levels."""
    efforts = model.efforts if model is not None else None
    decision = decide(
        request.model,
        efforts,
        model is not None,
        settings.effort_for(request.model),
        request.modelConfiguration.get(MENU_KEY),
        caller,
    )
    if decision.note:
        log.info("%s", decision.note)
    if decision.level is not None:
        body["reasoning"] = {"effort": decision.level, "summary": "auto"}
        return
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        if model is not None and efforts is None:
            body.pop("reasoning")  # a model that does not reason
        elif (asked := level(reasoning["effort"])) is not None and asked != "default":
            body["reasoning"] = {**reasoning, "effort": nearest(asked, efforts or by_rule(request.model))}


def set_speed(body: dict[str, Any], request: ChatRequest, settings: Settings, model: ModelInfo | None) -> None:
    """`providerOptions.gateway.speed`: "fast" when the menu in the chat input or the model's options
    ask for it and the model has a fast tier (speed.py); an extra body's own speed is left as set."""
    asked = settings.speed_for(request.model)
    chosen = speed.decide(model, asked, request.modelConfiguration.get(speed.MENU_KEY), None)
    if chosen is None:
        return
    provider_options = dict(body.get("providerOptions") or {})  # copies: extraBody's own objects stay as set
    provider_options["gateway"] = {**(provider_options.get("gateway") or {}), "speed": chosen}
    body["providerOptions"] = provider_options


def options_from_settings(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if settings.maxOutputTokens:
        options["max_output_tokens"] = max(16, settings.maxOutputTokens)
    routing = gateway_options(settings)
    if routing:
        options["providerOptions"] = {"gateway": routing}
    return options


def hold_privacy(body: dict[str, Any], settings: Settings) -> None:
    """The privacy settings that are on, written back over whatever a model's extraBody merged in
    (rfcs/0007, "Privacy settings hold"); `store` is never the extraBody's (options.RESERVED_BODY_KEYS)."""
    held = held_privacy(settings)
    if not held:
        return
    provider_options = dict(body.get("providerOptions") or {})  # copies: extraBody's own objects stay as set
    provider_options["gateway"] = {**(provider_options.get("gateway") or {}), **held}
    body["providerOptions"] = provider_options


def gateway_options(settings: Settings) -> dict[str, Any]:
    """`providerOptions.gateway`: routing, privacy and attribution (names as in @ai-sdk/gateway's
    GatewayProviderOptions, rfcs/0006-spend.md). A setting left at its default sends nothing."""
    chosen: dict[str, Any] = {
        "order": settings.gatewayOrder,
        "only": settings.gatewayOnly,
        "models": settings.gatewayModels,
        "sort": None if settings.gatewaySort == "default" else settings.gatewaySort,
        "zeroDataRetention": settings.zeroDataRetention,
        "disallowPromptTraining": settings.disallowPromptTraining,
        "serviceTier": None if settings.serviceTier == "default" else settings.serviceTier,
        "caching": None if settings.caching == "default" else settings.caching,
        "user": settings.attributionUser,
        "tags": settings.attributionTags,
    }
    return {key: value for key, value in chosen.items() if value}


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
    messages: list[MessageIn], names: ToolNameMap, model: str = "", unreasoned_as_text: bool = False
) -> list[Item]:
    """`unreasoned_as_text`: a step (a run of assistant messages: one response) whose calls have no
    reasoning before them goes as a transcript (rfcs/0002, "A history that lost its reasoning")."""
    results = {part.callId: part for m in messages for part in m.content if isinstance(part, ToolResultIn)}
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
            continue
        items.extend(_step(step, unreasoned_as_text))
        step = []
        items.extend(user_items(message, called))
    items.extend(_step(step, unreasoned_as_text))
    return items


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
