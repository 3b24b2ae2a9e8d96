"""Recorded streams → events: a raw `text/event-stream` body, or one JSON event per line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
from httpx_sse import EventSource


def events_from_recording(body: bytes) -> Iterator[Any]:
    """Events as the client would yield them; a line that is not JSON is passed on as None."""
    if _is_json_lines(body):
        for line in body.decode("utf-8", errors="replace").splitlines():
            if line.strip():
                yield _loads(line)
        return
    # Framing goes through httpx-sse, exactly as a live stream does.
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    for sse in EventSource(response).iter_sse():
        if sse.data == "[DONE]":
            return
        if sse.data:
            event = _loads(sse.data)
            if isinstance(event, dict) and "type" not in event and sse.event not in ("", "message"):
                event["type"] = sse.event
            yield event


def _is_json_lines(body: bytes) -> bool:
    first = body.lstrip()[:1]
    return first == b"{"


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
