"""`gateway-lm serve`: the sidecar on stdio — pygls' own message loop (`run_async`) reading an asyncio
pipe through a stream that bounds bad input (stdio.py), and writing through a non-blocking writer.
pygls' `start_io` would hand every read to a thread pool, which doubles the cost of each small
request (a token count) (rfcs/0005), and write with a blocking write and flush per message.

The loop is uvloop's where it is installed (everywhere but Windows, which it does not support): each
part wakes the sidecar for a socket read and leaves through a pipe write, and libuv's loop takes
~0.04 ms less of that than asyncio's (rfcs/0005, "The first part")."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Coroutine
from typing import Any, BinaryIO

import anyio
from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer

from ..logs import configure
from .methods import Sidecar, build_server
from .outbox import is_pipe, stdout_writer
from .protocol import WireProtocol
from .stdio import Stdin


def serve() -> None:
    if not _stdin_is_a_stream():
        # asyncio waits forever on a file or /dev/null, and uvloop aborts the process.
        print(
            "gateway-lm serve: stdin must be a pipe or a terminal (the extension starts it with pipes)", file=sys.stderr
        )
        raise SystemExit(2)
    rpc_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the JSON-RPC stream
    configure(logging.StreamHandler(sys.stderr), "info")
    server, sidecar = build_server()
    try:
        _run(_serve_stdio(server, sidecar, rpc_out))
    except (BrokenPipeError, KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]


def _stdin_is_a_stream() -> bool:
    if sys.platform == "win32":  # nothing to check against there; the extension always gives a pipe
        return True
    return is_pipe(sys.stdin.fileno()) or sys.stdin.isatty()


def _run(main: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:  # Windows
        asyncio.run(main)
    else:
        uvloop.run(main)


async def _serve_stdio(server: LanguageServer, sidecar: Sidecar, rpc_out: BinaryIO) -> None:
    """pygls' message loop on an asyncio pipe reader (stdio.py), and a non-blocking writer (outbox.py)."""
    loop = asyncio.get_running_loop()
    # anyio's asyncio backend loads now, not under the first chat's deadline (rfcs/0005, "Measured costs").
    anyio.current_time()
    reader = asyncio.StreamReader(limit=1 << 20)  # stdin pauses past 2 MiB unread: memory stays bounded under load
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    writer = await stdout_writer(rpc_out)
    protocol = server.protocol
    assert isinstance(protocol, WireProtocol)
    protocol.set_writer(writer)  # behind the strict check (protocol.py)
    sidecar.outbox.attach(writer)
    stdin = Stdin(reader)
    await run_async(
        stop_event=threading.Event(),  # the loop ends with stdin, or `exit` ends the process
        reader=stdin,
        protocol=protocol,
        # A body pygls could not parse: answered by its id, with the one log line refuse() writes.
        error_handler=lambda error, _source: protocol.refuse(stdin.fault_for(error)),
    )
