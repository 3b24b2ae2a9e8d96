"""What a request carries for the provider's prompt cache (rfcs/0011-prompt-cache.md): the gateway's
top-level `caching: "auto"` and `cache_anchor_items`, which place Anthropic's and MiniMax's
breakpoints, and a per-conversation `prompt_cache_key`, sent again as the `x-session-affinity` header,
which keeps a conversation's requests where its prefix is cached.

`/v1/responses` documents no per-item `cache_control`: the gateway places its own two breakpoints
(the last message, and the one before the last user message) and the anchor adds a third after the
first N input items. Copilot's own markers (a `cache_control` data part) say where it wants one; the
anchor goes after the earliest of them the gateway would not mark itself, else after Copilot's
global-context message (the first user message), which every later request repeats."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Literal

CacheMode = Literal["auto", "off"]
# The gateway's documented limit on `prompt_cache_key`; the key sent is shorter.
MAX_CACHE_KEY = 64
KEY_CHARS = 40  # hex of SHA-256: 160 bits, far from a collision between one user's conversations
AFFINITY_HEADER = "x-session-affinity"
# The last items are the gateway's own: `caching: "auto"` marks the last message and the one before
# the last user message, so an anchor there adds nothing (rfcs/0011, "The anchor").
GATEWAY_MARKS_LAST = 2
# The opening user messages a key is made of: Copilot's global context, then the conversation's first
# request.
FIRST_USER_MESSAGES = 2


def cache_fields(
    items: Sequence[Any], marked: Sequence[int], instructions: str, model: str, mode: CacheMode
) -> dict[str, Any]:
    """The body's prompt-cache fields, in the order they are written: `caching` and
    `cache_anchor_items` when caching is on, and `prompt_cache_key` always (it only helps).
    `marked`: the indices of `items` that carried a Copilot cache marker (translate.conversation)."""
    fields: dict[str, Any] = {}
    if mode == "auto":
        fields["caching"] = "auto"
        anchor = anchor_items(items, marked)
        if anchor is not None:
            fields["cache_anchor_items"] = anchor
    fields["prompt_cache_key"] = cache_key(model, instructions, items)
    return fields


def anchor_items(items: Sequence[Any], marked: Sequence[int]) -> int | None:
    """N for `cache_anchor_items`: the items up to and including the earliest marked one that is not
    among the last GATEWAY_MARKS_LAST; without such a marker, up to and including the first user
    message, which is the whole input of a conversation's first request and stays the same N in every
    later one. Never past the input; None when it has no user message."""
    limit = len(items) - GATEWAY_MARKS_LAST
    early = [index for index in marked if 0 <= index < limit]
    if early:
        return min(early) + 1
    first_user = next((index for index, item in enumerate(items) if _is_user_message(item)), None)
    return None if first_user is None else first_user + 1


def cache_key(model: str, instructions: str, items: Sequence[Any]) -> str:
    """A conversation's key: the model, the system prompt and the user messages it opens with (at most
    FIRST_USER_MESSAGES, before any answer), which every request of the conversation repeats
    unchanged. Copilot's first user message is its global context (the workspace, the OS, the date),
    the same in every chat of a window; the second is the user's first request, the conversation's
    own. A later turn's message comes after an answer, so it never moves the key. Two chats that open
    alike share the key, and share that prefix too, so the key sends them where it is cached."""
    opening: list[Any] = []
    for item in items:
        if not _is_user_message(item) or len(opening) == FIRST_USER_MESSAGES:
            break
        opening.append(item)
    named = json.dumps([model, instructions, *(_text_of(item) for item in opening)], ensure_ascii=False)
    return hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_CHARS]


def _is_user_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user"


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
