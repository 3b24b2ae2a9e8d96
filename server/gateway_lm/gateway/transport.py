"""The gateway's HTTP transport: httpx's API over aiohttp's connections (rfcs/0005-performance.md).

A gateway flushes one SSE event per HTTP chunk. httpx's own transport parses a chunked body with h11
and hands every chunk up through five async generators: three quarters of the sidecar's CPU on a
fast stream (rfcs/0005-performance.md, "h11 per chunk"). aiohttp
parses HTTP in C and hands over everything that arrived in one read. httpx stays the API the client
is written against — requests, timeouts, errors, decoding of the body, proxies from the environment
(requests through a proxy go through httpx's own transport, never here); this only moves bytes.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx

# Set by aiohttp itself; the body is passed on as httpx encoded it.
_SKIP_HEADERS = frozenset({"host", "content-length", "transfer-encoding"})


class AiohttpTransport(httpx.AsyncBaseTransport):
    def __init__(self, verify: ssl.SSLContext | bool) -> None:
        self._ssl: ssl.SSLContext | bool = verify if isinstance(verify, ssl.SSLContext) else verify is True
        self._session: aiohttp.ClientSession | None = None

    def _connections(self) -> aiohttp.ClientSession:
        if self._session is None:  # aiohttp wants its running loop: made at the first request
            reuse = aiohttp.TraceConfig()
            reuse.on_connection_reuseconn.append(_note_reuse)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=self._ssl),  # no cap: each chat holds one
                auto_decompress=False,  # httpx decodes the body, and classifies one it cannot decode
                trust_env=False,  # httpx picked the proxy; requests here go direct
                timeout=aiohttp.ClientTimeout(total=None),
                trace_configs=[reuse],
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._send(request)
        except aiohttp.SocketTimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "no answer in time") from exc
        except (aiohttp.ConnectionTimeoutError, asyncio.TimeoutError) as exc:
            raise httpx.ConnectTimeout(str(exc) or "no connection in time") from exc
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return httpx.Response(
            status_code=response.status,
            headers=list(response.raw_headers),
            stream=_Body(response),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode()},
        )

    async def _send(self, request: httpx.Request) -> aiohttp.ClientResponse:
        timeouts = request.extensions.get("timeout", {})
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=timeouts.get("connect"), sock_read=timeouts.get("read")
        )
        headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() not in _SKIP_HEADERS]
        body = await request.aread()
        for attempt in (1, 2):
            reused = {"reused": False}
            try:
                return await self._connections().request(
                    request.method,
                    str(request.url),
                    headers=headers,
                    data=body,
                    allow_redirects=False,
                    timeout=timeout,
                    trace_request_ctx=reused,
                )
            except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError):
                # A pooled connection the server had closed without saying so, before the loop saw
                # it go (httpx checks a connection is still open before reusing it; aiohttp does not):
                # once more, on a new connection.
                if attempt == 2 or not reused["reused"]:
                    raise
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


async def _note_reuse(_session: aiohttp.ClientSession, context: Any, _params: Any) -> None:
    context.trace_request_ctx["reused"] = True


class _Body(httpx.AsyncByteStream):
    """The body as it arrives: one piece per network read, however many chunks it holds."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for data in self._response.content.iter_any():
                yield data
        except aiohttp.SocketTimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "no data in time") from exc
        except aiohttp.ClientPayloadError as exc:
            raise httpx.RemoteProtocolError("it closed before the answer was complete") from exc
        except aiohttp.ClientConnectionError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        # A body read to its end gives the connection back; one abandoned midway (a cancelled chat,
        # an error) closes it, so the gateway sees the client go at once.
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()
