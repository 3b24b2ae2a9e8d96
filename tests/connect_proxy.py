"""A real HTTP CONNECT proxy on 127.0.0.1 for the tests: it tunnels bytes (TLS passes through it
untouched, as through a company proxy that does not re-sign) and records each CONNECT's target and
Proxy-Authorization header. With `require` set, a CONNECT without that header is answered 407.

Runs its own asyncio loop in a daemon thread, so the tests' loop and sidecar subprocesses can use it.
Every wait is bounded (the CONNECT's head, a tunnel that carries nothing), and `stop()` closes every
connection still open and waits for the loop's thread to end, so no connection outlives its test
(one left open to a TLS server that handshakes in its accept loop once hung a CI run).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field

MAX_HEAD = 16 << 10
HEAD_TIMEOUT = 10.0  # for the CONNECT request's head
IDLE_TIMEOUT = 30.0  # a tunnel that carries nothing either way for this long is closed
STOP_TIMEOUT = 5.0


@dataclass
class Connect:
    target: str
    authorization: str | None


@dataclass
class ConnectProxy:
    require: str | None = None  # the Proxy-Authorization value a CONNECT must carry
    seen: list[Connect] = field(default_factory=list)
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _server: asyncio.Server | None = None
    _thread: threading.Thread | None = None
    _open: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def targets(self) -> list[str]:
        return [c.target for c in self.seen]

    def start(self) -> ConnectProxy:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            self._server = loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(STOP_TIMEOUT):
            raise RuntimeError("the CONNECT proxy did not start")
        return self

    def stop(self) -> None:
        loop, server, thread = self._loop, self._server, self._thread
        if loop is None or server is None or thread is None:
            return

        def close_all() -> None:
            server.close()
            for writer in list(self._open):
                writer.transport.abort()  # both ends of every tunnel, at once
            loop.call_soon(loop.stop)

        loop.call_soon_threadsafe(close_all)
        thread.join(STOP_TIMEOUT)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            await self._serve(reader, writer)
        finally:
            self._open.discard(writer)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, OSError):
            return
        lines = head[:MAX_HEAD].decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        target = rest.partition(" ")[0]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        authorization = headers.get("proxy-authorization")
        self.seen.append(Connect(target, authorization))
        if method != "CONNECT":
            await _answer(writer, b"HTTP/1.1 405 Only CONNECT\r\ncontent-length: 0\r\n\r\n")
            return
        if self.require is not None and authorization != self.require:
            await _answer(writer, b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
            return
        host, _, port = target.rpartition(":")
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), HEAD_TIMEOUT)
        except (OSError, ValueError, asyncio.TimeoutError):
            await _answer(writer, b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            return
        self._open.add(up_writer)
        try:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except OSError:
            pass
        finally:
            self._open.discard(up_writer)
            up_writer.close()


async def _answer(writer: asyncio.StreamWriter, response: bytes) -> None:
    writer.write(response)
    with contextlib.suppress(OSError):
        await writer.drain()
    writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await asyncio.wait_for(reader.read(65536), IDLE_TIMEOUT):
            writer.write(data)
            await asyncio.wait_for(writer.drain(), IDLE_TIMEOUT)
    except (OSError, asyncio.TimeoutError):
        pass
    finally:
        writer.close()
