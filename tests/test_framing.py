"""The sidecar's stdin as pygls reads it: pygls' own loop (`run_async`) over the bounded stream
(rpc/stdio.py) gets the same messages however the bytes are split, answers what it cannot read by
its id, and holds no garbage."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, cast

import pytest
from pygls.io_ import run_async

from gateway_lm.rpc.codes import PARSE_ERROR
from gateway_lm.rpc.framing import Fault
from gateway_lm.rpc.protocol import checked
from gateway_lm.rpc.stdio import Stdin

pytestmark = pytest.mark.asyncio


def frame(body: bytes, length: int | None = None, extra: bytes = b"") -> bytes:
    return b"Content-Length: %d\r\n%s\r\n" % (len(body) if length is None else length, extra) + body


def message(msg_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "m", "params": {"s": "Content-Length: 5"}}).encode()


class Pipe:
    """An asyncio stream's `read`, a piece at a time, counting what the reader holds."""

    def __init__(self, data: bytes, step: int) -> None:
        self.pieces = [data[start : start + step] for start in range(0, len(data), step)]

    async def read(self, n: int) -> bytes:
        await asyncio.sleep(0)
        return self.pieces.pop(0) if self.pieces else b""


class Recorder:
    """What pygls hands the protocol: each message, as the sidecar's protocol sees it."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    def structure_message(self, data: Any) -> Any:
        return data

    def handle_message(self, message: Any) -> None:
        self.messages.append(message)


async def pygls_reads(data: bytes, step: int, max_body: int | None = None) -> tuple[list[Any], list[Fault], Stdin]:
    stdin = Stdin(cast(asyncio.StreamReader, Pipe(data, step)), *([max_body] if max_body else []))
    recorder, faults = Recorder(), []
    await run_async(
        stop_event=threading.Event(),
        reader=stdin,
        protocol=cast(Any, recorder),
        error_handler=lambda error, _source: faults.append(stdin.fault_for(error)),
    )
    return recorder.messages, faults, stdin


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


async def test_the_same_messages_however_the_bytes_are_split() -> None:
    for step in (1, 2, 7, 64, len(STREAM)):
        messages, faults, _ = await pygls_reads(STREAM, step)
        assert [m["id"] for m in messages] == [1, 2, 3, 5, 7], step
        assert [(f.code, f.msg_id) for f in faults] == [(PARSE_ERROR, 4), (PARSE_ERROR, 6)], step


async def test_an_oversized_body_is_answered_with_its_id_and_never_held() -> None:
    body = b'{"jsonrpc":"2.0","id":"big","method":"m","params":"' + b"z" * 5000 + b'"}'
    messages, faults, _ = await pygls_reads(frame(body) + frame(message(6)), 100, max_body=1000)
    assert [(f.msg_id, "limit" in f.message) for f in faults] == [("big", True)]
    assert [m["id"] for m in messages] == [6]


async def test_garbage_is_not_accumulated() -> None:
    stdin = Stdin(cast(asyncio.StreamReader, Pipe(b"g" * 5_000_000 + frame(message(7)), 100_000)))
    longest = 0
    while line := await stdin.readline():
        longest = max(longest, len(line))
        if line.startswith(b"Content-Length"):
            break
    assert longest < 110_000 and line == b"Content-Length: %d\r\n" % len(message(7))


async def test_a_header_block_that_never_ends_is_skipped() -> None:
    data = b"Content-Length: 5\r\n" + b"X-Long: " + b"a" * 20_000 + b"\r\n\r\n" + frame(message(8))
    messages, faults, _ = await pygls_reads(data, 1000)
    assert [m["id"] for m in messages] == [8]
    assert [f.msg_id for f in faults] in ([], [None])  # the cut-off block's length is not believed


async def test_params_are_optional_and_ids_are_checked() -> None:
    assert checked({"jsonrpc": "2.0", "id": 1, "method": "m"}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "m",
        "params": None,
    }
    for bad in ({"jsonrpc": "2.0", "id": True, "method": "m"}, {"jsonrpc": "2.0", "id": None, "method": "m"}):
        fault = checked(bad)
        assert isinstance(fault, Fault) and fault.msg_id is None and fault.answer
    notification = checked({"jsonrpc": "1.0", "method": "m"})
    assert isinstance(notification, Fault) and not notification.answer
