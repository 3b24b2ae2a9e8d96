"""The reasoning round trip (rfcs/0002-stream-state-machine.md, "The reasoning round trip").

Reasoning models need their reasoning back on the next tool turn: OpenAI's answer better with it,
Anthropic with extended thinking and Gemini 3 refuse or degrade a tool turn without it. With
`store: false` the gateway keeps nothing, so the reasoning travels with the conversation:
- out: `ReasoningLog` gathers a response's reasoning items (id, encrypted content, summary) and what
  came right after each. Each item leaves as a `reasoningItem` part when it is done, its encrypted
  content tagged (`tag`), for a host that keeps only what a Responses item carries (the Copilot
  harness's bridge); the whole response's leave as one `reasoningState` part at its end, for Copilot
  Chat's editor path, which keeps only a response's last thinking metadata;
- in: `HistoryReasoning` turns either form, back in the history, into `reasoning` input items, each
  placed where it was: right before the call that followed it.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from typing import Any

from .messages import (
    MAX_ENCRYPTED,
    MAX_REASONING_ID,
    MAX_REASONING_ITEMS,
    MAX_SUMMARY,
    MAX_SUMMARY_PARTS,
    MAX_TAG_HEAD,
    ROLE_ASSISTANT,
    MessageIn,
    ReasoningItem,
    ReasoningItemPart,
    ReasoningStatePart,
    ThinkingIn,
    ToolCallIn,
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
        self._handed: set[str] = set()  # ids already handed on as `reasoningItem` parts

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

    def item_part(self, key: Key, model: str) -> ReasoningItemPart | None:
        """The item at `key` as a `reasoningItem` part, when it is done with encrypted content and was
        not handed on yet (once per id; the call after it is not known yet: the host keeps the order)."""
        item = self._items.get(key)
        if item is None or not model or item["id"] in self._handed:
            return None
        self._handed.add(item["id"])
        return {"type": "reasoningItem", "id": item["id"], "tagged": tag(model, item)}

    def late_parts(self, model: str) -> list[ReasoningItemPart]:
        """At the end of the response, the items whose encrypted content came only with the terminal
        `output[]`, each tagged with the call that came after it."""
        parts: list[ReasoningItemPart] = []
        for item in _unique(self._placed())[:MAX_REASONING_ITEMS]:
            if model and item["id"] not in self._handed:
                self._handed.add(item["id"])
                parts.append({"type": "reasoningItem", "id": item["id"], "tagged": tag(model, item)})
        return parts

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


# The prefix of an item's tagged encrypted content: `TAG.<base64url of JSON {model, id, before?,
# summary?}>.<the provider's encrypted content>`. A host that keeps only what a Responses item carries
# drops a thinking part's other metadata, keeps an id only when it starts with "rs" (the harness's
# bridge), and may merge, split or reorder messages: the tag keeps what the item needs to go back to
# the model that made it, where it was.
TAG = "aigw1"


def tag(model: str, item: ReasoningItem) -> str:
    head: dict[str, Any] = {"model": model, "id": item["id"]}
    if item["before"]:
        head["before"] = item["before"]
    if item["summary"]:
        head["summary"] = item["summary"]
    encoded = _b64(head)
    if len(encoded) > MAX_TAG_HEAD:
        head.pop("summary", None)  # optional: the encrypted content is what the model needs
        encoded = _b64(head)
    return f"{TAG}.{encoded}.{item['encryptedContent']}"


def untag(tagged: str) -> tuple[str, ReasoningItem] | None:
    """The model and the item a tagged text carries; None when it is not ours or does not read."""
    prefix, _, rest = tagged.partition(".")
    encoded, _, encrypted = rest.partition(".")
    if prefix != TAG or not encrypted or len(encrypted) > MAX_ENCRYPTED or len(encoded) > MAX_TAG_HEAD:
        return None
    try:
        head = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (binascii.Error, ValueError, RecursionError):  # a head nested too deep to read is no head
        return None
    if not isinstance(head, dict):
        return None
    model, item_id, before, summary = head.get("model"), head.get("id"), head.get("before"), head.get("summary", [])
    if not (isinstance(model, str) and model and isinstance(item_id, str) and 0 < len(item_id) <= MAX_REASONING_ID):
        return None
    if before is not None and not (isinstance(before, str) and 0 < len(before) <= MAX_REASONING_ID):
        return None
    if not isinstance(summary, list) or not all(isinstance(t, str) for t in summary):
        return None
    item: ReasoningItem = {"id": item_id, "encryptedContent": encrypted, "summary": _bounded(summary), "before": before}
    return model, item


def _b64(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def _bounded(texts: list[str]) -> list[str]:
    if len(texts) > MAX_SUMMARY_PARTS or any(len(t) > MAX_SUMMARY for t in texts):
        return []
    return texts


class HistoryReasoning:
    """Where each reasoning item that came back in a history goes, in either form: a `state` (Copilot
    Chat's editor path) or a `tagged` item (the Copilot harness's bridge, one thinking part per item,
    each in an assistant message of its own). An item goes right before the call that followed it
    wherever that call is in the history; one whose call is not there goes first in the message it
    came back in. Another model's reasoning is dropped: it cannot read it, and providers refuse what
    they cannot verify. An id is sent once; `bool(history)` says whether any item is sent."""

    def __init__(self, messages: list[MessageIn], model: str) -> None:
        calls = {p.callId for m in messages if m.role == ROLE_ASSISTANT for p in m.content if isinstance(p, ToolCallIn)}
        self.first: dict[int, list[Item]] = {}  # message index → the items that go first in it
        self.before: dict[str, list[Item]] = {}  # call id → the items that go right before it
        seen: set[str] = set()
        for index, message in enumerate(messages):
            if message.role != ROLE_ASSISTANT:
                continue
            for part in message.content:
                if not isinstance(part, ThinkingIn):
                    continue
                for owner, item in _carried(part):
                    if owner != model:
                        log.debug("reasoning of %s left out of a request to %s (item %s)", owner, model, item["id"])
                        continue
                    if item["id"] in seen:
                        continue
                    seen.add(item["id"])
                    entry: Item = {
                        "type": "reasoning",
                        "id": item["id"],
                        "encrypted_content": item["encryptedContent"],
                        "summary": [{"type": "summary_text", "text": text} for text in item["summary"]],
                    }
                    if item["before"] is not None and item["before"] in calls:
                        self.before.setdefault(item["before"], []).append(entry)
                    else:
                        self.first.setdefault(index, []).append(entry)

    def __bool__(self) -> bool:
        return bool(self.first or self.before)


def _carried(part: ThinkingIn) -> list[tuple[str, ReasoningItem]]:
    """The items a history thinking part carries: its state's, then its tagged one."""
    carried: list[tuple[str, ReasoningItem]] = []
    if part.state is not None:
        for item in part.state.items:
            entry: ReasoningItem = {
                "id": item.id,
                "encryptedContent": item.encryptedContent,
                "summary": list(item.summary),
                "before": item.before,
            }
            carried.append((part.state.model, entry))
    if part.tagged is not None:
        untagged = untag(part.tagged)
        if untagged is None:
            log.debug("a reasoning item in the history is not one of ours; left out")
        else:
            carried.append(untagged)
    return carried
