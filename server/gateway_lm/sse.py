"""SSE framing with httpx-sse's own decoders, driven one network chunk at a time.

`EventSource.aiter_sse()` hands every line through four nested async generators; at thousands of
events per second that overhead dominates the stream (rfcs/0005-performance.md). The same
line and event decoders, fed per chunk in a plain loop, give identical events for a fraction of the
cost. The decoders live in httpx-sse's `_decoders` module, pinned with the package (0.4.3).
"""

from __future__ import annotations

import codecs
from typing import Any

from httpx_sse import ServerSentEvent
from httpx_sse._decoders import SSEDecoder, SSELineDecoder
from pydantic_core import from_json

DONE = object()  # the `data: [DONE]` sentinel some servers send


class SSEFramer:
    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lines = SSELineDecoder()
        self._events = SSEDecoder()

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        return self._decode(self._lines.decode(self._text.decode(chunk)) if chunk else [])

    def close(self) -> list[ServerSentEvent]:
        """A last event not followed by a blank line still counts."""
        tail = self._text.decode(b"", final=True)
        lines = (self._lines.decode(tail) if tail else []) + self._lines.flush()
        return self._decode([*lines, ""])

    def _decode(self, lines: list[str]) -> list[ServerSentEvent]:
        events = []
        for line in lines:
            sse = self._events.decode(line)
            if sse is not None:
                events.append(sse)
        return events


def parse_event(sse: ServerSentEvent) -> Any:
    """The event's JSON payload; DONE for `[DONE]`; None for an empty or unparsable payload."""
    data = sse.data
    if not data:
        return None
    if data == "[DONE]":
        return DONE
    try:
        event = from_json(data)  # pydantic-core's Rust parser: a third of json.loads' time here
    except ValueError:
        return None
    # Prefer the JSON `type`; fall back to the `event:` line for servers that omit it.
    if isinstance(event, dict) and "type" not in event and sse.event not in ("", "message"):
        event["type"] = sse.event
    return event
