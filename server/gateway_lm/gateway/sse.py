"""SSE framing: httpx-sse's line decoder, driven one network chunk at a time, and the event fields we read.

`EventSource.aiter_sse()` hands every line through four nested async generators; at thousands of
events per second that overhead dominates the stream (rfcs/0005-performance.md). httpx-sse's line
decoder (the spec's CR / LF / CRLF splitting) is fed per chunk in a plain loop. Its event decoder is
not used: it cost a `ServerSentEvent` per event and two thirds of the sidecar's CPU on a stream
(rfcs/0005-performance.md, "An object per SSE line") to assemble fields of which only `data` and
`event` are read (`id` and `retry` mean nothing to a one-shot POST stream). `_decode` assembles those two as the spec
says, into `(event, data)` pairs; tests/test_sse.py checks it against httpx-sse's own event decoder on
generated streams cut at random.

One event (its unfinished line plus its `data:` lines so far) may hold at most MAX_EVENT characters:
a gateway that never ends a line would otherwise grow the buffer, and its copies, without end.
A byte-order mark at the start of a line is dropped (a server that writes one before its first
`data:` would otherwise lose that event: the field name would not be `data`).
"""

from __future__ import annotations

import codecs
from typing import Any

from pydantic_core import from_json

from .errors import GatewayError, with_advice
from .httpx_sse_hooks import SSELineDecoder

DONE = object()  # the `data: [DONE]` sentinel some servers send
# The largest real event is the terminal one, repeating the whole answer: ~1 MB for 128k output
# tokens. 16 MiB leaves room for big tool arguments and inline images.
MAX_EVENT = 16 << 20
_BOM = "\ufeff"

Event = tuple[str, str]  # (the `event:` field, the `data:` lines joined); a tuple costs least to make


class SSEFramer:
    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lines = SSELineDecoder()
        self._event = ""  # the `event:` field of the event being read
        self._data: list[str] = []  # its `data:` lines
        self._line_chars = 0  # of the line not finished yet
        self._data_chars = 0  # of the `data:` lines of the event not finished yet

    def feed(self, chunk: bytes) -> list[Event]:
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

    def close(self) -> list[Event]:
        """A last event not followed by a blank line still counts."""
        tail = self._text.decode(b"", final=True)
        lines = (self._lines.decode(tail) if tail else []) + self._lines.flush()
        return self._decode([*lines, ""])

    def _decode(self, lines: list[str]) -> list[Event]:
        """Events with data, as the spec dispatches them: a blank line ends one; "field: value" drops
        one leading space; a line without a colon is a field with an empty value; comments (":"),
        `id`, `retry` and unknown fields change nothing we read."""
        events = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append((self._event, "\n".join(data)))
                    data = self._data = []
                self._event = ""
                self._data_chars = 0
                continue
            if line[0] == _BOM:
                line = line[1:]
            if line.startswith("data"):
                value = _value(line, 4)
                if value is not None:
                    data.append(value)
                    self._data_chars += len(line)
            elif line.startswith("event"):
                value = _value(line, 5)
                if value is not None:
                    self._event = value
        return events


def _value(line: str, name_length: int) -> str | None:
    """The value of a field line whose name is the first `name_length` characters, if it is."""
    if len(line) == name_length:
        return ""  # "data" alone: the field, with an empty value
    if line[name_length] != ":":
        return None  # "database: …": another field
    return line[name_length + 2 :] if line[name_length + 1 : name_length + 2] == " " else line[name_length + 1 :]


def parse_event(event: Event) -> Any:
    """The event's JSON payload; DONE for `[DONE]`; None for an empty or unparsable payload."""
    name, data = event
    if not data:
        return None
    if data == "[DONE]":
        return DONE
    try:
        payload = from_json(data)  # pydantic-core's Rust parser: a third of json.loads' time here
    except ValueError:
        return None
    # Prefer the JSON `type`; fall back to the `event:` line for servers that omit it.
    if isinstance(payload, dict) and "type" not in payload and name not in ("", "message"):
        payload["type"] = name
    return payload
