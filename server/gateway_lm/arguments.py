"""Tool-call arguments: a JSON string from the model → the object VS Code hands the tool.

Only repairs that cannot change meaning are made (surrounding whitespace or a Markdown code fence,
trailing commas, junk after a complete object). Truncated JSON is never "closed" by guessing: a
half-written file path is worse than an error. Anything else is passed on as
``{"invalidArguments": <raw text>}``, which fails the tool's schema validation so the model sees the
error and can retry — the call is never dropped.
"""

from __future__ import annotations

import json
import re
from typing import Any

INVALID_KEY = "invalidArguments"
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
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


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
        value, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    return text[:end] if isinstance(value, dict) else None
