"""`gateway/parts` coalesced by backpressure on the sidecar's stdout (whose writers are in pipes.py).

A gateway flushes one SSE event per HTTP chunk, so a busy stream makes thousands of parts a second.
One notification each costs pygls' encoding and a write here and a frame plus a JSON parse in the
extension host, for every part (rfcs/0005-performance.md). Instead, the first part of a burst is sent
at once, so an idle pipe adds no latency; while that write is pending (the event loop has not come
back round yet, or the pipe is full), later parts of the same request gather in the outbox and leave
as one notification, adjacent text merged, when it drains. There is no timer. Each notification is
pygls' (`notify`): the batching is the notification's content (rfcs/0003), the framing pygls'.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..messages import PartOut, TextPart, ThinkingPart
from .pipes import Drains, PipeWriter, ThreadWriter

log = logging.getLogger(__name__)


Notify = Callable[[str, dict[str, Any]], None]  # pygls' `notify(method, params)`


class Outbox:
    """`gateway/parts` per request, in order, coalesced while the previous write is pending."""

    def __init__(self, notify: Notify) -> None:
        self._notify = notify
        self._pipe: Drains | None = None  # the writer pygls writes through, when it can be full
        self._pending: dict[str | int, list[PartOut]] = {}
        self._busy = False

    def attach(self, writer: object) -> None:
        """The writer pygls was given: when it says what it has not written (pipes.py), parts wait
        while that is not nothing; pygls' blocking writer (a file, a terminal) is never full."""
        self._pipe = writer if isinstance(writer, PipeWriter | ThreadWriter) else None

    def post(self, request_id: str | int, parts: list[PartOut]) -> None:
        if not parts:
            return
        if self._busy or self._pending:
            self._pending.setdefault(request_id, []).extend(parts)
        else:
            self._write(request_id, parts)

    def flush(self, request_id: str | int) -> None:
        """Sends what is waiting for this request now: its result must not overtake its parts."""
        parts = self._pending.pop(request_id, None)
        if parts:
            self._write(request_id, parts)

    def drop(self, request_id: str | int) -> None:
        """A cancelled request's waiting parts are never sent (rfcs/0003-rpc-contract.md)."""
        self._pending.pop(request_id, None)

    def _write(self, request_id: str | int, parts: list[PartOut]) -> None:
        self._notify("gateway/parts", {"requestId": request_id, "parts": coalesced(parts)})
        if not self._busy:
            self._busy = True
            asyncio.get_running_loop().call_soon(self._on_loop_turn)

    def _on_loop_turn(self) -> None:
        if self._pipe is not None and self._pipe.backlog:
            self._pipe.when_drained(self._on_loop_turn)  # the pipe is full: the client reads slower
            return
        self._busy = False
        waiting, self._pending = self._pending, {}
        for request_id, parts in waiting.items():
            self._write(request_id, parts)


def coalesced(parts: list[PartOut]) -> list[PartOut]:
    """Adjacent text parts joined into one (and thinking of the same item): the extension then reports
    one part instead of hundreds, and the user sees the same characters."""
    out: list[PartOut] = []
    run: list[str] = []  # the values of the text or thinking run that ends `out`
    for part in parts:
        if run and _joins(out[-1], part):
            run.append(_value(part))
            continue
        if len(run) > 1:
            out[-1] = _joined(out[-1], run)
        out.append(part)
        run = [_value(part)] if part["type"] in ("text", "thinking") else []
    if len(run) > 1:
        out[-1] = _joined(out[-1], run)
    return out


def _joins(last: PartOut, part: PartOut) -> bool:
    if last["type"] == "text":
        return part["type"] == "text"
    return last["type"] == "thinking" and part["type"] == "thinking" and last["id"] == part["id"]


def _value(part: PartOut) -> str:
    return part["value"] if part["type"] in ("text", "thinking") else ""


def _joined(first: PartOut, values: list[str]) -> PartOut:
    if first["type"] == "thinking":
        return ThinkingPart(type="thinking", value="".join(values), id=first["id"])
    return TextPart(type="text", value="".join(values))
