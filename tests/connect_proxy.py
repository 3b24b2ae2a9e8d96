"""A real HTTP CONNECT proxy on 127.0.0.1 for the tests: it tunnels bytes (TLS passes through it
untouched, as through a company proxy that does not re-sign) and records each CONNECT's target and
Proxy-Authorization header. With `require` set, a CONNECT without that header is answered 407.

Runs its own asyncio loop in a daemon thread, so the tests' loop and sidecar subprocesses can use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field

MAX_HEAD = 16 << 10


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
            self._loop = loop
            self._server = loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait(5)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
            self._loop.call_soon_threadsafe(self._loop.stop)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
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
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except (OSError, ValueError):
            await _answer(writer, b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _answer(writer: asyncio.StreamWriter, response: bytes) -> None:
    writer.write(response)
    with contextlib.suppress(OSError):
        await writer.drain()
    writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()
