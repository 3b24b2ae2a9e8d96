"""Recorded streams → events: a raw `text/event-stream` body, or one JSON event per line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .sse import DONE, SSEFramer, parse_event


def events_from_recording(body: bytes) -> Iterator[Any]:
    """Events as the client would yield them; a line that is not JSON is passed on as None."""
    if _is_json_lines(body):
        for line in body.decode("utf-8", errors="replace").splitlines():
            if line.strip():
                yield _loads(line)
        return
    # The same framing as a live stream.
    framer = SSEFramer()
    for sse in [*framer.feed(body), *framer.close()]:
        event = parse_event(sse)
        if event is DONE:
            return
        _, data = sse
        if data:
            yield event


def _is_json_lines(body: bytes) -> bool:
    first = body.lstrip()[:1]
    return first == b"{"


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
