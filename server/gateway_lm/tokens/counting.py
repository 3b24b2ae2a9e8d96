"""`gateway/countTokens` without stalling the sidecar (rfcs/0005-performance.md).

- The tokenizer (its load holds the GIL: rfcs/0005, "The tokenizer under") loads when the first
  count needs it, or once the sidecar has been idle for a moment after start: never under a chat
  that is streaming, which would wait for the GIL behind it.
- A background batch (the extension's prefetch of tool strings) waits for the tokenizer to load
  as above, and never loads it itself: a prefetch sent at start does not move the load under a chat.
  Any other count still loads it at once.
- Small batches (the usual case: one string or message) are counted inline, which costs less than a
  thread hop. Large ones are counted in a worker thread, piece by piece, so streams keep flowing,
  memory stays bounded and a cancelled count stops within one piece.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..messages import MessageIn, TextIn, ToolCallIn, ToolResultIn
from .tokenizer import count_message, count_text, encoding, encoding_name_for, pieces

INLINE_CHARS = 1 << 16  # below this a batch costs less than a thread hop
PRELOAD_AFTER = 1.0  # seconds after start; Copilot's first counts usually come later than that


class TokenService:
    def __init__(self) -> None:
        self._load: asyncio.Future[Any] | None = None
        self._chats = 0
        self._preload_due = False
        self._started: asyncio.Event | None = None  # set when the load starts, for background counts

    # ---- loading ----

    def schedule_preload(self) -> None:
        asyncio.get_running_loop().call_later(PRELOAD_AFTER, self._preload)

    def _preload(self) -> None:
        if self._chats:
            self._preload_due = True  # after the streams in flight end
        else:
            self._start_load()

    def _start_load(self) -> asyncio.Future[Any]:
        if self._load is None:
            self._load = asyncio.ensure_future(asyncio.to_thread(encoding, encoding_name_for("")))
            if self._started is not None:
                self._started.set()
        return self._load

    def chat_started(self) -> None:
        self._chats += 1

    def chat_ended(self) -> None:
        self._chats -= 1
        if self._chats == 0 and self._preload_due:
            self._preload_due = False
            self._start_load()

    async def ready(self) -> None:
        load = self._start_load()
        if not load.done():
            await asyncio.shield(load)  # a cancelled count must not cancel the load

    async def loaded(self) -> None:
        """Until the tokenizer has loaded, without loading it."""
        if self._load is None:
            if self._started is None:
                self._started = asyncio.Event()
            await self._started.wait()
        await self.ready()

    # ---- counting ----

    def count_now(self, model: str, items: list[str | MessageIn]) -> list[int] | None:
        """The counts at once when the tokenizer is loaded and the batch is small; else None."""
        if self._load is None or not self._load.done() or self._load.exception() is not None:
            return None
        if sum(_size(item) for item in items) > INLINE_CHARS:
            return None
        return [_count_item(model, item) for item in items]

    async def count(self, model: str, items: list[str | MessageIn], background: bool = False) -> list[int]:
        await (self.loaded() if background else self.ready())
        if sum(_size(item) for item in items) <= INLINE_CHARS:
            return [_count_item(model, item) for item in items]
        return [await _count_off_loop(model, item) for item in items]


def _count_item(model: str, item: str | MessageIn) -> int:
    return count_text(model, item) if isinstance(item, str) else count_message(model, item)


async def _count_off_loop(model: str, item: str | MessageIn) -> int:
    if not isinstance(item, str):
        return await asyncio.to_thread(count_message, model, item)
    total = 0
    for piece in pieces(item):
        total += await asyncio.to_thread(count_text, model, piece)
    return total


def _size(item: str | MessageIn | Any) -> int:
    """Characters to count, roughly: enough to tell a small batch from a large one."""
    if isinstance(item, str):
        return len(item)
    if isinstance(item, MessageIn):
        return sum(_size(part) for part in item.content)
    if isinstance(item, TextIn):
        return len(item.value)
    if isinstance(item, ToolCallIn):
        return len(str(item.input))
    if isinstance(item, ToolResultIn):
        return sum(_size(part) for part in item.content)
    return 64
