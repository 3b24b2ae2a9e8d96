"""The SSE framer's own bounds: one event's size, and a byte-order mark before a field."""

from __future__ import annotations

import json

import pytest

from gateway_lm.errors import GatewayError
from gateway_lm.sse import MAX_EVENT, SSEFramer, parse_event

EVENT = {"type": "response.output_text.delta", "delta": "Hello"}


def events(framer: SSEFramer, *chunks: bytes) -> list[object]:
    found = [parse_event(sse) for chunk in chunks for sse in framer.feed(chunk)]
    return found + [parse_event(sse) for sse in framer.close()]


@pytest.mark.parametrize(
    "chunks",
    [
        [b"\xef\xbb\xbfdata: " + json.dumps(EVENT).encode() + b"\n\n"],
        [b"\xef", b"\xbb", b"\xbfdata: " + json.dumps(EVENT).encode() + b"\r\n\r\n"],  # split across reads
        [b": hi\n\n\xef\xbb\xbfdata: " + json.dumps(EVENT).encode() + b"\n\n"],
    ],
)
def test_a_byte_order_mark_before_a_field_is_dropped(chunks: list[bytes]) -> None:
    assert events(SSEFramer(), *chunks) == [EVENT]


def test_an_event_as_big_as_the_cap_is_read() -> None:
    delta = "x" * (MAX_EVENT - 100)
    body = ("data: " + json.dumps({**EVENT, "delta": delta}) + "\n\n").encode()
    framer = SSEFramer()
    assert events(framer, *(body[i : i + 65536] for i in range(0, len(body), 65536))) == [{**EVENT, "delta": delta}]


@pytest.mark.parametrize(
    "piece",
    [b"x" * 65536, b"data: " + b"x" * 65530 + b"\n"],  # one endless line; many data lines of one event
)
def test_a_bigger_event_stops_the_stream_once_past_the_cap(piece: bytes) -> None:
    framer = SSEFramer()
    framer.feed(b"data: ")
    fed = 0
    with pytest.raises(GatewayError) as raised:
        while fed < 4 * MAX_EVENT:
            framer.feed(piece)
            fed += len(piece)
    assert raised.value.kind == "protocol" and f"{MAX_EVENT >> 20} MiB" in raised.value.message
    assert fed <= MAX_EVENT + len(piece)
