"""gateway/parts coalescing: what the extension receives is what the stream said, in fewer parts,
each notification written by pygls (the sidecar's protocol over the writer serve.py gives it), with
either stdio mode's writer (pipes.py): the event loop's pipe transport, or the writer thread Windows uses."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

from gateway_lm.messages import PartOut
from gateway_lm.rpc.methods import build_server
from gateway_lm.rpc.outbox import Outbox, coalesced
from gateway_lm.rpc.pipes import MODES, Mode, PipeWriter, ThreadWriter, stdout_writer


def text(value: str) -> PartOut:
    return {"type": "text", "value": value}


def thinking(value: str, item: str | None = "rs_1") -> PartOut:
    return {"type": "thinking", "value": value, "id": item}


def test_adjacent_text_and_same_item_thinking_join_and_nothing_else_moves() -> None:
    call: PartOut = {"type": "toolCall", "callId": "c1", "name": "read_file", "input": {}}
    parts = [thinking("a"), thinking("b"), thinking("c", "rs_2"), text("x"), text("y"), call, text("z")]
    assert coalesced(parts) == [thinking("ab"), thinking("c", "rs_2"), text("xy"), call, text("z")]
    assert coalesced([]) == []
    assert coalesced([text("only")]) == [text("only")]


async def pipe_writer(mode: Mode, write_end: int) -> PipeWriter | ThreadWriter:
    """The writer `mode` gives the sidecar, on the write end of a real pipe."""
    if mode == "threads":
        return ThreadWriter(write_end, asyncio.get_running_loop())
    writer = await stdout_writer(os.fdopen(write_end, "wb", buffering=0))
    assert isinstance(writer, PipeWriter)
    return writer


def pygls_outbox(writer: PipeWriter | ThreadWriter) -> Outbox:
    """The sidecar's outbox, as serve.py wires it: pygls writes, the outbox watches the pipe."""
    server, sidecar = build_server()
    server.protocol.set_writer(writer)
    sidecar.outbox.attach(writer)
    return sidecar.outbox


def _length(header: bytes) -> int:
    return int(header.split(b"\r\n")[0].split(b":")[1])


def frames(data: bytes) -> list[dict[str, Any]]:
    messages = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = _length(header)
        messages.append(json.loads(rest[:length]))
        data = rest[length:]
    return messages


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_a_burst_leaves_as_one_notification_after_the_first_and_results_never_overtake(mode: Mode) -> None:
    read_end, write_end = os.pipe()
    writer = await pipe_writer(mode, write_end)
    outbox = pygls_outbox(writer)
    outbox.post("r1", [text("first")])  # an idle pipe: written at once
    for n in range(100):
        outbox.post("r1", [text(f" {n}")])  # the same loop turn: gathered
    outbox.post("r2", [text("other")])
    outbox.flush("r1")  # r1's result is due: its parts go first
    await asyncio.sleep(0.01)
    outbox.post("r2", [text(" more")])  # idle again: at once
    outbox.post("r2", [text(" lost")])
    outbox.drop("r2")  # cancelled before the next turn: what was waiting is never sent
    await asyncio.sleep(0.01)
    writer.close()
    received = frames(os.read(read_end, 1 << 20))
    assert [m["params"]["requestId"] for m in received] == ["r1", "r1", "r2", "r2"]
    assert received[0]["params"]["parts"] == [text("first")]
    assert received[1]["params"]["parts"] == [text("".join(f" {n}" for n in range(100)))]
    assert received[2]["params"]["parts"] == [text("other")]
    assert received[3]["params"]["parts"] == [text(" more")]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_a_full_pipe_gathers_parts_until_it_drains(mode: Mode) -> None:
    read_end, write_end = os.pipe()
    writer = await pipe_writer(mode, write_end)
    outbox = pygls_outbox(writer)
    outbox.post("r", [text("x" * (1 << 20))])  # more than the pipe holds: a backlog remains
    await asyncio.sleep(0.01)
    for n in range(50):
        outbox.post("r", [text(str(n))])
        await asyncio.sleep(0)  # loop turns pass, but the pipe is still full
    data = b""
    while len(frames_safe(data)) < 2:
        await asyncio.sleep(0.001)
        data += os.read(read_end, 1 << 20)
    received = frames_safe(data)
    assert len(received) == 2, "everything posted while the pipe was full left as one notification"
    assert received[1]["params"]["parts"] == [text("".join(str(n) for n in range(50)))]


def frames_safe(data: bytes) -> list[dict[str, Any]]:
    try:
        return frames(data)
    except (ValueError, IndexError):
        return frames(data[: _complete_prefix(data)])


def _complete_prefix(data: bytes) -> int:
    end = 0
    while True:
        header, sep, rest = data[end:].partition(b"\r\n\r\n")
        if not sep:
            return end
        length = _length(header)
        if len(rest) < length:
            return end
        end += len(header) + len(sep) + length
