"""`gateway-lm serve`: the sidecar on stdio — pygls' own message loop (`run_async`) reading stdin
through a stream that bounds bad input (stdio.py), and writing through a writer that never blocks the
event loop. How stdin and stdout are opened is the `--stdio` mode (pipes.py): on the event loop, or on
threads (Windows). pygls' `start_io` would hand every read to a thread pool, which doubles the cost
of each small request (a token count) (rfcs/0005), and write with a blocking write and flush per
message.

With `loop`, the loop is uvloop's where it is installed (everywhere but Windows, which it does not
support): each part wakes the sidecar for a socket read and leaves through a pipe write, and libuv's
loop takes ~0.04 ms less of that than asyncio's (rfcs/0005, "The first part"). With `threads` it is
asyncio's own, as on Windows."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Coroutine
from typing import Any, BinaryIO

import anyio
from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer

from ..logs import configure, to_stderr
from .methods import Sidecar, build_server
from .pipes import Mode, is_pipe, open_loop, open_threads
from .protocol import WireProtocol
from .stdio import Stdin


def serve(mode: Mode) -> None:
    if mode == "loop" and sys.platform == "win32":
        print(
            "gateway-lm serve: --stdio loop does not run on Windows, whose event loop cannot watch the"
            " standard handles; use --stdio threads (the default there)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    if mode == "loop" and not _stdin_is_a_stream():
        # asyncio waits forever on a file or /dev/null, and uvloop aborts the process.
        print(
            "gateway-lm serve: stdin must be a pipe or a terminal (the extension starts it with pipes)", file=sys.stderr
        )
        raise SystemExit(2)
    rpc_in, rpc_out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the JSON-RPC stream
    configure(logging.StreamHandler(sys.stderr), "info")
    server, sidecar = build_server(mode)
    try:
        _run(_serve_stdio(server, sidecar, mode, rpc_in, rpc_out), uvloop=mode == "loop")
    except (BrokenPipeError, KeyboardInterrupt, SystemExit):  # SystemExit: pygls' answer to `exit`
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]
    # The client has gone (`exit`, or stdin ended): the last saves log to stderr, not its closed
    # pipe, and run here, not only at the interpreter's exit, which `threads` skips (below).
    to_stderr()
    sidecar.chats.accounting.close()
    if mode == "threads":
        # The reader thread may still be inside a blocking read of stdin, which the interpreter's
        # own exit could wait behind (pipes.py): end here, everything of ours already written.
        logging.shutdown()
        sys.stderr.flush()
        os._exit(0)


def _stdin_is_a_stream() -> bool:
    """Asked in `loop` mode only, which Windows refuses above: no standard handle is fstat'ed there."""
    return is_pipe(sys.stdin.fileno()) or sys.stdin.isatty()


def _run(main: Coroutine[Any, Any, None], uvloop: bool) -> None:
    if uvloop:
        try:
            import uvloop as libuv_loop
        except ImportError:  # Windows
            pass
        else:
            libuv_loop.run(main)
            return
    asyncio.run(main)


async def _serve_stdio(
    server: LanguageServer, sidecar: Sidecar, mode: Mode, rpc_in: BinaryIO, rpc_out: BinaryIO
) -> None:
    """pygls' message loop on the bounded stream (stdio.py) over stdin, writing through pipes.py's writer."""
    # anyio's asyncio backend loads now, not under the first chat's deadline (rfcs/0005, "Measured costs").
    anyio.current_time()
    source, writer = await open_loop(rpc_in, rpc_out) if mode == "loop" else open_threads(rpc_in, rpc_out)
    protocol = server.protocol
    assert isinstance(protocol, WireProtocol)
    protocol.set_writer(writer)  # behind the strict check (protocol.py)
    sidecar.outbox.attach(writer)
    stdin = Stdin(source)
    await run_async(
        stop_event=threading.Event(),  # the loop ends with stdin, or `exit` ends the process
        reader=stdin,
        protocol=protocol,
        # A body pygls could not parse: answered by its id, with the one log line refuse() writes.
        error_handler=lambda error, _source: protocol.refuse(stdin.fault_for(error)),
    )
