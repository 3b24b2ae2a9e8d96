"""The SSE framer: the events httpx-sse's own event decoder gives, however the stream is cut; and its
own bounds: one event's size, and a byte-order mark before a field."""

from __future__ import annotations

import json

import pytest
from httpx_sse._decoders import SSEDecoder, SSELineDecoder
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_lm.gateway.errors import GatewayError
from gateway_lm.gateway.sse import MAX_EVENT, SSEFramer, parse_event

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


# Lines a gateway, a proxy or a broken server may send: every field the spec knows, fields it does
# not, lines without a colon, comments, blank lines (event ends), values with and without the space.
FIELD_LINES = st.sampled_from(
    [
        'data: {"type": "a"}',
        'data:{"type":"b"}',
        "data:  two spaces",
        "data",
        "data:",
        "event: response.output_text.delta",
        "event:x",
        "event",
        "id: 7",
        "retry: 10",
        ": keep-alive",
        "database: not data",
        "eventually: not event",
        "\ufeffdata: after a BOM",
        "",
        "",
    ]
)
NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])


def reference(text: str) -> list[tuple[str, str]]:
    """httpx-sse's event decoder over httpx-sse's line decoder, as `aiter_sse()` drives them."""
    lines = SSELineDecoder()
    decoder = SSEDecoder()
    found = []
    for line in [*lines.decode(text), *lines.flush(), ""]:
        event = decoder.decode(line[1:] if line.startswith("\ufeff") else line)
        if event is not None and event.data:
            found.append((event.event, event.data))
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(FIELD_LINES, NEWLINES), max_size=40), st.lists(st.integers(1, 40), max_size=20))
def test_the_events_are_httpx_sses_however_the_stream_is_cut(lines: list[tuple[str, str]], cuts: list[int]) -> None:
    body = "".join(line + newline for line, newline in lines).encode()
    framer = SSEFramer()
    found, start = [], 0
    for size in cuts:
        found += framer.feed(body[start : start + size])
        start += size
    found += framer.feed(body[start:]) + framer.close()
    ours = [(name or "message", data) for name, data in found if data]
    assert ours == reference(body.decode())
