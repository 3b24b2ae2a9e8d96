"""The reasoning round trip (rfcs/0002-stream-state-machine.md, "The reasoning round trip").

Reasoning models need their reasoning back on the next tool turn: OpenAI's answer better with it,
Anthropic with extended thinking and Gemini 3 refuse or degrade a tool turn without it. With
`store: false` the gateway keeps nothing, so the reasoning travels with the conversation:
- out: `ReasoningLog` gathers a response's reasoning items (id, encrypted content, summary) and what
  came right after each, and gives one `reasoningState` part at the end of the response;
- in: `reasoning_items` turns the state that came back in an assistant message of the history into
  `reasoning` input items, each placed where it was: right before the call that followed it.
"""

from __future__ import annotations

import logging
from typing import Any

from .messages import (
    MAX_ENCRYPTED,
    MAX_REASONING_ID,
    MAX_REASONING_ITEMS,
    MAX_SUMMARY,
    MAX_SUMMARY_PARTS,
    ReasoningItem,
    ReasoningStateIn,
    ReasoningStatePart,
)

log = logging.getLogger(__name__)

Key = int | str
Item = dict[str, Any]


class ReasoningLog:
    """One response's reasoning items with encrypted content, in output order. Fed every output item
    as it is added and done, then the terminal response's `output[]` (authoritative)."""

    def __init__(self) -> None:
        self._order: dict[Key, tuple[str, str | None]] = {}  # key → (item type, call id)
        self._items: dict[Key, ReasoningItem] = {}
        self._too_large = 0

    def see(self, key: Key, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        kind = raw.get("type")
        if not isinstance(kind, str):
            return
        call_id = raw.get("call_id") if isinstance(raw.get("call_id"), str) else None
        known = self._order.get(key)
        self._order[key] = (kind, call_id or (known[1] if known else None))
        if kind == "reasoning":
            self._see_reasoning(key, raw)

    def see_output(self, output: Any) -> None:
        for index, raw in enumerate(output if isinstance(output, list) else []):
            self.see(index, raw)

    def part(self, model: str) -> ReasoningStatePart | None:
        """The state to hand on, or None when no item carried encrypted content."""
        items = _unique(self._placed())
        left_out = self._too_large + max(0, len(items) - MAX_REASONING_ITEMS)
        if left_out:
            log.warning(
                "%d reasoning items were too large or too many to carry to the next turn; a provider that"
                " needs them may refuse the next tool turn",
                left_out,
            )
        items = items[:MAX_REASONING_ITEMS]
        if not items or not model:
            return None
        return {"type": "reasoningState", "model": model, "items": items}

    def _see_reasoning(self, key: Key, raw: Item) -> None:
        encrypted, item_id = raw.get("encrypted_content"), raw.get("id")
        if not isinstance(encrypted, str) or not encrypted or not isinstance(item_id, str) or not item_id:
            return  # `added` often lacks it; `done` (or the terminal output) brings it
        if len(encrypted) > MAX_ENCRYPTED or len(item_id) > MAX_REASONING_ID:
            self._too_large += key not in self._items
            return
        summary = _summary(raw.get("summary"))
        previous = self._items.get(key)
        if previous is not None and not summary:
            summary = previous["summary"]  # the terminal output may leave the summary out
        self._items[key] = {"id": item_id, "encryptedContent": encrypted, "summary": summary, "before": None}

    def _placed(self) -> list[ReasoningItem]:
        """The items in output order, each with the call that came right after it (reasoning items
        in a row all take the call that ends the row; a message ends it without a call)."""
        keys = list(self._order)
        if all(isinstance(k, int) for k in keys):
            keys.sort(key=int)
        placed: list[ReasoningItem] = []
        waiting: list[ReasoningItem] = []
        for key in keys:
            kind, call_id = self._order[key]
            if kind == "reasoning":
                item = self._items.get(key)
                if item is not None:
                    item["before"] = None
                    waiting.append(item)
                    placed.append(item)
                continue
            for item in waiting:
                item["before"] = call_id if kind == "function_call" else None
            waiting = []
        return placed


def _unique(items: list[ReasoningItem]) -> list[ReasoningItem]:
    """One copy per id, the first: an item seen by item_id in the events and by index in `output[]`
    is one item."""
    seen: set[str] = set()
    unique: list[ReasoningItem] = []
    for item in items:
        if item["id"] not in seen:
            seen.add(item["id"])
            unique.append(item)
    return unique


def _summary(raw: Any) -> list[str]:
    texts = (
        [p["text"] for p in raw if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if isinstance(raw, list)
        else []
    )
    if len(texts) > MAX_SUMMARY_PARTS or any(len(t) > MAX_SUMMARY for t in texts):
        return []  # the encrypted content is what the model needs; a summary is optional
    return texts


def reasoning_items(
    states: list[ReasoningStateIn], model: str, seen: set[str]
) -> tuple[list[Item], dict[str, list[Item]]]:
    """The input items of an assistant message's reasoning: those that go first, and those that go
    right before a call (by call id). Another model's reasoning is dropped: it cannot read it, and
    providers refuse what they cannot verify. An id already sent is not sent twice."""
    first: list[Item] = []
    before: dict[str, list[Item]] = {}
    for state in states:
        if state.model != model:
            log.debug("reasoning of %s left out of a request to %s (%d items)", state.model, model, len(state.items))
            continue
        for item in state.items:
            if item.id in seen:
                continue
            seen.add(item.id)
            summary = [{"type": "summary_text", "text": text} for text in item.summary]
            entry = {"type": "reasoning", "id": item.id, "encrypted_content": item.encryptedContent, "summary": summary}
            (before.setdefault(item.before, []) if item.before else first).append(entry)
    return first, before
