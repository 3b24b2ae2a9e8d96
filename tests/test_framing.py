"""The stdin framer alone: the same messages however the bytes are split, and bounded garbage."""

from __future__ import annotations

import json
from typing import Any

from gateway_lm.rpc.framing import PARSE_ERROR, Fault, Framer
from gateway_lm.rpc.stdio import parse


def frame(body: bytes, length: int | None = None, extra: bytes = b"") -> bytes:
    return b"Content-Length: %d\r\n%s\r\n" % (len(body) if length is None else length, extra) + body


def message(msg_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "m", "params": {"s": "Content-Length: 5"}}).encode()


def feed_all(framer: Framer, data: bytes, step: int) -> list[Any]:
    out: list[Any] = []
    for start in range(0, len(data), step):
        out.extend(framer.feed(data[start : start + step]))
    return [bytes(item) if isinstance(item, bytearray) else item for item in out]


STREAM = (
    frame(message(1))
    + b"stray bytes\n"
    + frame(message(2), extra=b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n")
    + b"Content-Type: x\r\n"
    + frame(message(3))
    + frame(message(4), length=len(message(4)) + 40)  # a wrong length, found out by the next header
    + frame(message(5))
    + frame(message(6), length=len(message(6)) + 5)  # the length ends inside the next header's name
    + frame(message(7))
)


def test_the_same_messages_however_the_bytes_are_split() -> None:
    for step in (1, 2, 7, 64, len(STREAM)):
        out = feed_all(Framer(), STREAM, step)
        bodies = [item for item in out if isinstance(item, bytes)]
        faults = [item for item in out if isinstance(item, Fault)]
        assert bodies == [message(1), message(2), message(3), message(5), message(7)], step
        assert [(f.code, f.msg_id) for f in faults] == [(PARSE_ERROR, 4), (PARSE_ERROR, 6)], step


def test_an_oversized_body_is_answered_with_its_id_and_never_held() -> None:
    framer = Framer(max_body=1000)
    body = b'{"jsonrpc":"2.0","id":"big","method":"m","params":"' + b"z" * 5000 + b'"}'
    out = feed_all(framer, frame(body) + frame(message(6)), 100)
    assert isinstance(out[0], Fault) and out[0].msg_id == "big" and "limit" in out[0].message
    assert out[1:] == [message(6)]
    assert len(framer._buf) == 0


def test_garbage_is_not_accumulated() -> None:
    framer = Framer()
    for _ in range(50):
        assert framer.feed(b"g" * 100_000) == []
        assert len(framer._buf) < 64
    assert [bytes(b) for b in framer.feed(frame(message(7))) if isinstance(b, bytearray)] == [message(7)]


def test_a_header_block_that_never_ends_is_skipped() -> None:
    framer = Framer()
    assert framer.feed(b"Content-Length: 5\r\n" + b"X-Long: " + b"a" * 20_000) == []
    assert len(framer._buf) < 10_000
    assert [bytes(b) for b in framer.feed(b"\r\n\r\n" + frame(message(8))) if isinstance(b, bytearray)] == [message(8)]


def test_params_are_optional_and_ids_are_checked() -> None:
    assert parse(b'{"jsonrpc":"2.0","id":1,"method":"m"}') == {"jsonrpc": "2.0", "id": 1, "method": "m", "params": None}
    for bad in (b'{"jsonrpc":"2.0","id":true,"method":"m"}', b'{"jsonrpc":"2.0","id":null,"method":"m"}'):
        fault = parse(bad)
        assert isinstance(fault, Fault) and fault.msg_id is None and fault.answer
    notification = parse(b'{"jsonrpc":"1.0","method":"m"}')
    assert isinstance(notification, Fault) and not notification.answer
