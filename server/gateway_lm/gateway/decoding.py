"""A response body's `content-encoding` undone a bounded piece at a time.

httpx's own decoders inflate each network read whole: one read of a gzip bomb (64 KiB that inflate
to 64 MiB) was in memory before any cap of ours saw a byte. Here zlib never hands back more than
`piece` bytes per call, and the next piece is made only when the reader asks for it, so a reader that
stops at its cap (an error body's 64 KiB, an SSE event's 16 MiB) never holds more than the cap and
one piece. The encodings are those the client asks for (`ACCEPT_ENCODING`); others pass as they are,
as httpx passes them.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Protocol

import httpx

ACCEPT_ENCODING = "gzip, deflate"  # sent on every request: the encodings decoded here, and no others
PIECE = 1 << 20  # the most a piece of a decoded body holds


class _Decoder(Protocol):
    def feed(self, data: bytes, piece: int) -> Iterator[bytes]: ...


class _Zlib:
    """gzip, or deflate: zlib-wrapped as the standard says, or raw as some servers send it."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        self._started = False

    def feed(self, data: bytes, piece: int) -> Iterator[bytes]:
        while True:
            try:
                out = self._inflate.decompress(data, piece)
            except zlib.error as exc:
                if self._gzip or self._started:
                    raise httpx.DecodingError(str(exc)) from None
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, without zlib's header
                self._started = True
                continue
            self._started = True
            data = self._inflate.unconsumed_tail
            if out:
                yield out
            elif not data:  # all taken in, and nothing more to give: the next read's turn
                return


def _decoders(response: httpx.Response) -> list[_Decoder]:
    """The encodings in the order they are undone: the last applied first."""
    decoders: list[_Decoder] = []
    for value in reversed(response.headers.get_list("content-encoding", split_commas=True)):
        name = value.strip().lower()
        if name in ("gzip", "x-gzip"):
            decoders.append(_Zlib(gzip=True))
        elif name == "deflate":
            decoders.append(_Zlib(gzip=False))
    return decoders


def _through(decoders: list[_Decoder], data: bytes, piece: int) -> Iterator[bytes]:
    if not decoders:
        yield data
        return
    first, rest = decoders[0], decoders[1:]
    for out in first.feed(data, piece):
        yield from _through(rest, out, piece)


async def decoded(response: httpx.Response, piece: int = PIECE) -> AsyncIterator[bytes]:
    """The body, decoded, in pieces of at most `piece` bytes (an unencoded body: as each read brought
    it). An encoding that fails to decode raises httpx.DecodingError, as httpx's decoders do."""
    decoders = _decoders(response)
    async for raw in response.aiter_raw():
        if not decoders:
            yield raw  # the hot path: one piece per network read, as it came
            continue
        for out in _through(decoders, raw, piece):
            yield out
