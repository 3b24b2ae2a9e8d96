"""The sidecar's stdin and stdout, opened one of two ways (`gateway-lm serve --stdio loop|threads`).

- `loop` (the default everywhere but Windows): asyncio's pipe transports on the event loop (uvloop's
  where it is installed). No thread, no lock, no wake-up between threads: each part costs one
  non-blocking write (rfcs/0005-performance.md, "The first part").
- `threads` (the default on Windows): a thread reads stdin with blocking reads and a thread writes
  stdout with blocking writes, each handing over to the event loop. On Windows the loop is asyncio's
  proactor, which can only watch handles opened for overlapped I/O: `connect_read_pipe` and
  `connect_write_pipe` on the standard handles fail there (CPython bpo-26832), and the pipes a parent
  gives a child (Node's default `'pipe'` stdio, asyncio's own subprocesses) are synchronous anyway.
  pygls' `start_io` and the Python servers VS Code extensions launch read stdin on a thread for the
  same reason (rfcs/0001-architecture.md, "Windows").

Both give what serving needs: a source of stdin's bytes for the bounded stream (`stdio.Stdin`), and a
writer for pygls that never blocks the event loop and tells the outbox (outbox.py) how much it has not
written yet, so parts gather while the client reads slower than the gateway streams. Both hold at most
`HIGH_WATER` bytes of stdin unread, so a client that writes faster than the sidecar handles costs
bounded memory (rfcs/0003-rpc-contract.md, "Reading stdin: a bad message costs that message only").

The thread transport touches the standard handles only with `os.read` and `os.write`: no `fstat` (it
can block behind a pending read on a Windows pipe, CPython #78961), and no buffered file object, whose
lock a pending read would hold when the interpreter closes it at exit.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import stat
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, BinaryIO, Literal, Protocol

if TYPE_CHECKING:  # pygls loads when serving starts, not with every CLI command that names the modes
    from pygls.io_ import StdoutWriter

log = logging.getLogger(__name__)

Mode = Literal["loop", "threads"]
MODES: tuple[Mode, ...] = ("loop", "threads")
MODE_ENV = "GATEWAY_LM_STDIO"  # the default mode for a process and its children (the tests' way to pick one)
READ_SIZE = 1 << 20  # one read of stdin at most
HIGH_WATER = 2 << 20  # stdin's unread bytes past which reading pauses
WRITER_DRAIN_SECONDS = 2.0  # how long `exit` waits for what is left to write (the answer to `shutdown`)


def default_mode(platform: str, environ: Mapping[str, str]) -> Mode:
    named = environ.get(MODE_ENV)
    for mode in MODES:
        if named == mode:
            return mode
    return "threads" if platform == "win32" else "loop"


class Source(Protocol):
    """Where the bounded stream reads stdin's bytes: b"" at its end."""

    async def read(self, n: int) -> bytes: ...


class Drains(Protocol):
    """A writer that says how much it has not written yet, and when that is nothing."""

    @property
    def backlog(self) -> int: ...

    def when_drained(self, callback: Callable[[], None]) -> None: ...


# ---- loop: asyncio's pipe transports ----


class _PipeProtocol(asyncio.BaseProtocol):
    def __init__(self) -> None:
        self.on_drained: Callable[[], None] | None = None

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        waiting, self.on_drained = self.on_drained, None
        if waiting is not None:
            waiting()


class PipeWriter:
    """pygls' writer interface on an asyncio write transport: `write()` never blocks the event loop
    (pygls' own writer does a blocking write and a flush per message)."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _PipeProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        transport.set_write_buffer_limits(high=0)  # resume_writing() as soon as the buffer is empty

    def write(self, data: bytes) -> None:
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._transport.close()

    @property
    def backlog(self) -> int:
        return self._transport.get_write_buffer_size()

    def when_drained(self, callback: Callable[[], None]) -> None:
        if self.backlog == 0:
            callback()
        else:
            self._protocol.on_drained = callback


async def stdout_writer(stream: BinaryIO) -> PipeWriter | StdoutWriter:
    """A pipe writer on the sidecar's stdout; pygls' blocking writer where stdout is not a pipe (a
    file, a terminal): uvloop aborts the process on a file where asyncio raises."""
    from pygls.io_ import StdoutWriter

    if not is_pipe(stream.fileno()):
        return StdoutWriter(stream)
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.connect_write_pipe(_PipeProtocol, stream)
    except (ValueError, OSError):
        return StdoutWriter(stream)
    return PipeWriter(transport, protocol)


def is_pipe(fd: int) -> bool:
    """A pipe or a socket (what the extension gives the sidecar). Never called on Windows."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def open_loop(stdin: BinaryIO, stdout: BinaryIO) -> tuple[Source, PipeWriter | StdoutWriter]:
    loop = asyncio.get_running_loop()
    # The transport pauses reading past twice the limit unread: HIGH_WATER.
    reader = asyncio.StreamReader(limit=HIGH_WATER // 2)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    return reader, await stdout_writer(stdout)


# ---- threads: blocking reads and writes, each on a thread of its own ----


class ThreadReader:
    """stdin read by a thread and handed to the event loop; the thread waits while `high` bytes are
    unread, so a client that writes faster than the sidecar handles costs bounded memory."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, high: int = HIGH_WATER) -> None:
        self._fd = fd
        self._loop = loop
        self._high = high
        self._chunks: collections.deque[bytes] = collections.deque()
        self._ended = False
        self._waiter: asyncio.Future[None] | None = None
        self._room = threading.Condition()
        self._unread = 0  # bytes read from the pipe and not yet taken by `read`: guarded by _room
        self._thread = threading.Thread(target=self._run, name="gateway-lm stdin", daemon=True)
        self._thread.start()

    async def read(self, n: int) -> bytes:
        while not self._chunks:
            if self._ended:
                return b""
            self._waiter = self._loop.create_future()
            await self._waiter
        chunk = self._chunks.popleft()
        if len(chunk) > n:
            chunk, rest = chunk[:n], chunk[n:]
            self._chunks.appendleft(rest)
        with self._room:
            self._unread -= len(chunk)
            self._room.notify()
        return chunk

    def _run(self) -> None:  # the reader thread
        while True:
            with self._room:
                while self._unread >= self._high:
                    self._room.wait()
            try:
                data = os.read(self._fd, READ_SIZE)
            except OSError as error:  # a broken handle ends the input as its close would
                log.warning("stdin could not be read (%s); serving ends", error)
                data = b""
            with self._room:
                self._unread += len(data)
            try:
                self._loop.call_soon_threadsafe(self._arrived, data)
            except RuntimeError:  # the loop has closed: the process is ending
                return
            if not data:
                return

    def _arrived(self, data: bytes) -> None:  # on the loop
        if data:
            self._chunks.append(data)
        else:
            self._ended = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class ThreadWriter:
    """pygls' writer interface on a thread that writes stdout: `write()` only queues, so it never
    blocks the event loop; what is queued and not yet written is the backlog the outbox watches.
    Everything queued while a write is under way leaves in the next single write."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self._fd = fd
        self._loop = loop
        self._queue: list[bytes] = []
        self._lock = threading.Condition()
        self._backlog = 0  # guarded by _lock
        self._closing = False
        self._broken = False
        self._on_drained: Callable[[], None] | None = None  # touched on the loop only
        self._thread = threading.Thread(target=self._run, name="gateway-lm stdout", daemon=True)
        self._thread.start()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._closing or self._broken:
                return
            self._queue.append(data)
            self._backlog += len(data)
            self._lock.notify()

    def close(self) -> None:
        """What is queued is written first (the answer to `shutdown` precedes `exit`), for at most
        WRITER_DRAIN_SECONDS: a client that stopped reading cannot hold the exit."""
        with self._lock:
            self._closing = True
            self._lock.notify()
        self._thread.join(WRITER_DRAIN_SECONDS)

    @property
    def backlog(self) -> int:
        with self._lock:
            return self._backlog

    def when_drained(self, callback: Callable[[], None]) -> None:
        if self.backlog == 0:
            callback()
        else:
            self._on_drained = callback  # called by _drained, which the thread schedules after its write

    def _run(self) -> None:  # the writer thread
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._lock.wait()
                if not self._queue:
                    return
                data = b"".join(self._queue)
                self._queue.clear()
            self._write_all(data)
            with self._lock:
                self._backlog = 0 if self._broken else self._backlog - len(data)
                drained = self._backlog == 0
            if drained:
                try:
                    self._loop.call_soon_threadsafe(self._drained)
                except RuntimeError:  # the loop has closed: the process is ending
                    return

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._broken:
            try:
                view = view[os.write(self._fd, view) :]
            except OSError as error:  # the client is gone: its end of stdin closes too, which ends serving
                log.warning("stdout could not be written (%s); nothing more is sent", error)
                with self._lock:
                    self._broken = True
                    self._queue.clear()

    def _drained(self) -> None:  # on the loop
        waiting, self._on_drained = self._on_drained, None
        if waiting is not None and self.backlog == 0:
            waiting()
        elif waiting is not None:
            self._on_drained = waiting


def open_threads(stdin: BinaryIO, stdout: BinaryIO) -> tuple[ThreadReader, ThreadWriter]:
    loop = asyncio.get_running_loop()
    return ThreadReader(stdin.fileno(), loop), ThreadWriter(stdout.fileno(), loop)
