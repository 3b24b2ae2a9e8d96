"""Tool-call arguments: a JSON string from the model → the object VS Code hands the tool.

Only repairs that cannot change meaning are made (surrounding whitespace or a Markdown code fence,
trailing commas, junk after a complete object). Truncated JSON is never "closed" by guessing: a
half-written file path is worse than an error. Anything else is passed on as
``{"invalidArguments": <raw text>}``, which fails the tool's schema validation so the model sees the
error and can retry — the call is never dropped. So is JSON that is valid but unsafe to pass on:
nested deeper than MAX_DEPTH (every later step, down to the JSON-RPC writer, recurses per level) or
holding NaN/Infinity (not JSON; they would break the wire to the editor).
"""

from __future__ import annotations

import json
import re
from typing import Any

INVALID_KEY = "invalidArguments"
MAX_DEPTH = 200  # as deep as the SSE event parser reads; real tool arguments are a few levels deep
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def parse_arguments(raw: str | None) -> dict[str, Any]:
    text = (raw or "").strip()
    if not text:
        return {}
    parsed = _loads_object(text)
    if parsed is not None:
        return parsed
    for repaired in _repairs(text):
        parsed = _loads_object(repaired)
        if parsed is not None:
            return parsed
    return {INVALID_KEY: raw}


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and _within_depth(value) else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _within_depth(value: Any) -> bool:
    """Whether no container in `value` is nested deeper than MAX_DEPTH (without recursing)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > MAX_DEPTH:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return True


def _repairs(text: str) -> list[str]:
    candidates: list[str] = []
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
        candidates.append(text)
    candidates.append(_TRAILING_COMMA.sub(r"\1", text))
    first = _first_object(text)
    if first is not None:
        candidates.append(first)
    return candidates


def _first_object(text: str) -> str | None:
    try:
        value, end = json.JSONDecoder(parse_constant=_no_constant).raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return text[:end] if isinstance(value, dict) else None
