"""SSE framing with httpx-sse's own decoders, driven one network chunk at a time.

`EventSource.aiter_sse()` hands every line through four nested async generators; at thousands of
events per second that overhead dominates the stream (rfcs/0005-performance.md). The same
line and event decoders, fed per chunk in a plain loop, give identical events for a fraction of the
cost. The decoders live in httpx-sse's private `_decoders` module (httpx_sse_hooks.py).

One event (its unfinished line plus its `data:` lines so far) may hold at most MAX_EVENT characters:
a gateway that never ends a line would otherwise grow the buffer, and its copies, without end.
A byte-order mark at the start of a line is dropped (a server that writes one before its first
`data:` would otherwise lose that event: the field name would not be `data`).
"""

from __future__ import annotations

import codecs
from typing import Any

from httpx_sse import ServerSentEvent
from pydantic_core import from_json

from .errors import GatewayError, with_advice
from .httpx_sse_hooks import SSEDecoder, SSELineDecoder

DONE = object()  # the `data: [DONE]` sentinel some servers send
# The largest real event is the terminal one, repeating the whole answer: ~1 MB for 128k output
# tokens. 16 MiB leaves room for big tool arguments and inline images.
MAX_EVENT = 16 << 20
_BOM = "\ufeff"


class SSEFramer:
    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lines = SSELineDecoder()
        self._events = SSEDecoder()
        self._line_chars = 0  # of the line not finished yet
        self._data_chars = 0  # of the `data:` lines of the event not finished yet

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if not chunk:
            return []
        text = self._text.decode(chunk)
        lines = self._lines.decode(text)
        # Counted as it grows, never summed: a line trickling in a byte per read stays linear.
        if lines:
            # The decoder's unfinished line (a private hook): one piece at most after a newline.
            self._line_chars = sum(map(len, self._lines.buffer))
        else:
            self._line_chars += len(text)
        events = self._decode(lines)
        if self._line_chars + self._data_chars > MAX_EVENT:
            detail = f"An event from the gateway is larger than {MAX_EVENT >> 20} MiB; the answer was stopped"
            raise GatewayError("protocol", with_advice("protocol", detail))
        return events

    def close(self) -> list[ServerSentEvent]:
        """A last event not followed by a blank line still counts."""
        tail = self._text.decode(b"", final=True)
        lines = (self._lines.decode(tail) if tail else []) + self._lines.flush()
        return self._decode([*lines, ""])

    def _decode(self, lines: list[str]) -> list[ServerSentEvent]:
        events = []
        for line in lines:
            if line.startswith(_BOM):
                line = line[1:]
            if not line:
                self._data_chars = 0  # the event ends
            elif line.startswith("data"):
                self._data_chars += len(line)
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
