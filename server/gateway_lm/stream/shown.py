"""What the stream adapter has shown, per content slot.

Deltas are shown as they arrive; `.done` events and finished items carry the whole text, and only
the part the deltas missed may still be shown — never a second copy (rfcs/0002).
"""

from __future__ import annotations

from typing import Any

from ..messages import PartOut, ThinkingPart

Slot = tuple[Any, ...]  # (item key, "t" text | "s" summary | "r" reasoning, index)


class Shown:
    def __init__(self) -> None:
        # Lists, not `shown + delta`: re-copying a growing string per delta is quadratic.
        self._pieces: dict[Slot, list[str]] = {}
        # Items with thinking shown, kept apart: scanning every slot per reasoning item was quadratic
        # in the number of output items (rfcs/0005-performance.md, "Measured costs").
        self._thinking_items: set[Any] = set()
        self._last_text_item: Any = None

    def text(self, slot: Slot, delta: str) -> list[PartOut]:
        if not delta:
            return []
        self._remember(slot, delta)
        if self._last_text_item is not None and self._last_text_item != slot[0]:
            delta = "\n\n" + delta  # two assistant messages (e.g. commentary, final answer)
        self._last_text_item = slot[0]
        return [{"type": "text", "value": delta}]

    def thinking(self, slot: Slot, delta: str, item_id: str | None) -> list[PartOut]:
        if not delta:
            return []
        self._remember(slot, delta)
        self._thinking_items.add(slot[0])
        part: ThinkingPart = {"type": "thinking", "value": delta, "id": item_id}
        return [part]

    def missing(self, slot: Slot, full: Any) -> str:
        """What of `full` has not been shown yet; nothing when it disagrees with what was."""
        if not isinstance(full, str):
            return ""
        shown = "".join(self._pieces.get(slot, ()))
        return full[len(shown) :] if full.startswith(shown) else ""

    def has(self, slot: Slot) -> bool:
        return slot in self._pieces

    def has_thinking(self, key: Any) -> bool:
        return key in self._thinking_items

    def _remember(self, slot: Slot, delta: str) -> None:
        pieces = self._pieces.get(slot)
        if pieces is None:
            self._pieces[slot] = [delta]
        else:
            pieces.append(delta)
