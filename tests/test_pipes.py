"""The sidecar's two stdio modes (rpc/pipes.py) over real pipes: `loop`, and `threads`, which Windows
runs (rfcs/0001-architecture.md, "Windows"). Each holds at most its high-water mark of stdin unread
however fast the client writes, hands every byte over in order, and after `exit` the process ends in
bounded time with its stdin still open, as the extension leaves it."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import threading
import time
from typing import BinaryIO

import pytest

from fake_gateway import FakeServer
from gateway_lm.rpc.pipes import HIGH_WATER, MODES, READ_SIZE, Mode, Source, open_loop, open_threads
from raw_sidecar import RawSidecar

TOTAL = 24 << 20  # what the client tries to write: far past the mark
BLOCK = 64 << 10


class Client(threading.Thread):
    """Writes TOTAL bytes into the pipe, counting what the pipe took: the sidecar's side holds what
    was taken less what the pipe itself buffers."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.written = 0
        self.digest = hashlib.sha256()

    def run(self) -> None:
        block = bytes(range(256)) * (BLOCK // 256)
        try:
            while self.written < TOTAL:
                self.written += os.write(self.fd, block)
                self.digest.update(block)
        except OSError:
            pass
        finally:
            os.close(self.fd)


def pipe_size(fd: int) -> int:
    """What the pipe itself buffers: Linux says; elsewhere an upper bound (macOS grows a pipe to 64 KiB)."""
    try:
        import fcntl

        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (ImportError, AttributeError):
        return 1 << 20


async def opened(mode: Mode, stdin_fd: int, keep: list[BinaryIO]) -> Source:
    """`mode`'s source on the read end of a pipe, as serve.py opens sys.stdin (kept open in `keep`)."""
    stdout_read, stdout_write = os.pipe()
    stdin = os.fdopen(stdin_fd, "rb", buffering=0)
    stdout = os.fdopen(stdout_write, "wb", buffering=0)
    keep += [stdin, stdout, os.fdopen(stdout_read, "rb", buffering=0)]
    source, _writer = await open_loop(stdin, stdout) if mode == "loop" else open_threads(stdin, stdout)
    return source


def runs_here(mode: Mode) -> bool:
    return mode == "threads" or sys.platform != "win32"  # `loop` is refused on Windows (serve.py)


async def settled(client: Client) -> int:
    """What the client has written once it stops making progress (the pipe is full), bounded."""
    last, still_since = -1, time.monotonic()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)  # the loop runs: the source takes what it may
        if client.written != last:
            last, still_since = client.written, time.monotonic()
        elif time.monotonic() - still_since > 0.5:
            return last
    raise AssertionError(f"the client never stopped: {client.written:,} bytes written")


@pytest.mark.parametrize("mode", [mode for mode in MODES if runs_here(mode)])
async def test_stdin_holds_at_most_the_high_water_mark_and_loses_nothing(mode: Mode) -> None:
    read_end, write_end = os.pipe()
    buffered = pipe_size(write_end)
    client = Client(write_end)
    keep: list[BinaryIO] = []
    source = await opened(mode, read_end, keep)
    client.start()
    written = await settled(client)
    held = written - buffered
    assert written < TOTAL, "nobody read, yet the client could write everything: stdin is unbounded"
    assert held <= HIGH_WATER + READ_SIZE, f"{mode}: {held:,} bytes of stdin held unread"
    received, digest = 0, hashlib.sha256()
    while chunk := await asyncio.wait_for(source.read(READ_SIZE), 10):
        received += len(chunk)
        digest.update(chunk)
    assert received == TOTAL and digest.digest() == client.digest.digest(), f"{mode}: every byte, in order"
    for file in keep:
        file.close()


@pytest.mark.parametrize("mode", [mode for mode in MODES if runs_here(mode)])
async def test_exit_ends_the_process_in_bounded_time_with_stdin_still_open(mode: Mode, gateway: FakeServer) -> None:
    side = RawSidecar()
    await side.start(stdio=mode)
    assert side.proc is not None and side.proc.stdin is not None
    await side.initialize(gateway.base_url, {"maxRetries": 0})
    assert "result" in await side.request("gateway/models", {"apiKey": "sk-exit-test"})
    assert "result" in await side.request("shutdown", None)
    started = time.monotonic()
    side.send({"jsonrpc": "2.0", "method": "exit"})
    code = await asyncio.wait_for(side.proc.wait(), 5)  # stdin stays open: the client never closed it
    took = time.monotonic() - started
    assert code == 0, f"{mode}: exited with {code}"
    assert took < 3, f"{mode}: took {took:.2f} s to exit"
    assert f"stdio on {mode}" in side.logs(), "the log says which mode runs"
    side.proc.stdin.close()
