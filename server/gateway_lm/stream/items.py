"""Output items by correlation key, and the function calls assembled from them (rfcs/0002).

Items are keyed by `output_index` first: some servers rotate `item_id` on every event. A call is
emitted once per `call_id`, when its item is done or, failing that, at the terminal event.
"""

from __future__ import annotations

from typing import Any

from ..messages import PartOut, ToolCallPart
from ..toolnames import ToolNameMap
from .arguments import parse_arguments

Event = dict[str, Any]
Key = int | str


class Item:
    __slots__ = ("arg_deltas", "arguments", "call_id", "emitted", "id", "name", "type")

    def __init__(self) -> None:
        self.type = ""
        self.id: str | None = None
        self.call_id: str | None = None
        self.name: str | None = None
        self.arg_deltas: list[str] = []
        self.arguments: str | None = None
        self.emitted = False

    def merge(self, item: dict[str, Any]) -> None:
        self.type = str(item.get("type") or self.type)
        for attr in ("id", "call_id", "name"):
            value = item.get(attr)
            if isinstance(value, str) and value:
                setattr(self, attr, value)
        arguments = item.get("arguments")
        if isinstance(arguments, str) and arguments:
            self.arguments = arguments


class OutputItems:
    def __init__(self, names: ToolNameMap) -> None:
        self._names = names
        self._items: dict[Key, Item] = {}
        self._index_of_id: dict[str, Key] = {}
        self.emitted_calls: set[str] = set()

    def key(self, event: Event) -> Key:
        index = event.get("output_index")
        if isinstance(index, int):
            return index
        item_id = event.get("item_id")
        if isinstance(item_id, str):
            return self._index_of_id.get(item_id, item_id)
        return -1

    def track(self, event: Event) -> Item | None:
        """Merges the event's `item` into what is known of it."""
        raw = event.get("item")
        if not isinstance(raw, dict):
            return None
        key = self.key(event)
        item = self._item(key)
        item.merge(raw)
        if item.id:
            self._index_of_id[item.id] = key
        return item

    def item_id(self, event: Event) -> str | None:
        item = self._items.get(self.key(event))
        if item is not None and item.id:
            return item.id
        item_id = event.get("item_id")
        return item_id if isinstance(item_id, str) else None

    def arguments_delta(self, event: Event) -> None:
        delta = event.get("delta")
        if isinstance(delta, str):
            self._item(self.key(event)).arg_deltas.append(delta)

    def arguments_done(self, event: Event) -> None:
        arguments = event.get("arguments")
        if isinstance(arguments, str):
            self._item(self.key(event)).arguments = arguments

    def emit_call(self, item: Item) -> list[PartOut]:
        if item.emitted or not item.call_id or not item.name or item.call_id in self.emitted_calls:
            item.emitted = item.emitted or (item.call_id in self.emitted_calls)
            return []
        item.emitted = True
        self.emitted_calls.add(item.call_id)
        raw = item.arguments if item.arguments is not None else "".join(item.arg_deltas)
        part: ToolCallPart = {
            "type": "toolCall",
            "callId": item.call_id,
            "name": self._names.from_wire(item.name),
            "input": parse_arguments(raw),
        }
        return [part]

    def flush_calls(self, response: dict[str, Any]) -> list[PartOut]:
        """Calls never closed by `output_item.done`: the terminal response's output is authoritative,
        then whatever arguments were streamed."""
        parts: list[PartOut] = []
        output = response.get("output")
        for index, raw in enumerate(output if isinstance(output, list) else []):
            if isinstance(raw, dict) and raw.get("type") == "function_call":
                item = self._items.get(index) or Item()
                item.merge(raw)
                parts.extend(self.emit_call(item))
        for item in self._items.values():
            if item.type == "function_call":
                parts.extend(self.emit_call(item))
        return parts

    def _item(self, key: Key) -> Item:
        item = self._items.get(key)
        if item is None:
            item = self._items[key] = Item()
        return item
