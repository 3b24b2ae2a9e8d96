"""decoding.py: a body's content-encoding undone a bounded piece at a time (the gzip bombs against a
real sidecar are in tests/test_bounds.py)."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator

import httpx
import pytest

from gateway_lm.gateway.decoding import decoded

TEXT = b"the gateway's words " * 5000  # 100 KB


def response(body: bytes, encoding: str, reads: int = 3) -> httpx.Response:
    return httpx.Response(200, headers={"content-encoding": encoding}, stream=Reads(body, -(-len(body) // reads)))


class Reads(httpx.AsyncByteStream):
    """A body arriving in several network reads."""

    def __init__(self, body: bytes, size: int) -> None:
        self.chunks = [body[i : i + size] for i in range(0, len(body), size)]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def pieces(resp: httpx.Response, piece: int) -> list[bytes]:
    return [p async for p in decoded(resp, piece)]


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("gzip", gzip.compress(TEXT)),
        ("x-gzip", gzip.compress(TEXT)),
        ("deflate", zlib.compress(TEXT)),
        ("deflate", raw_deflate(TEXT)),  # as some servers send it: no zlib header
        ("gzip, deflate", zlib.compress(gzip.compress(TEXT))),  # applied in that order
        ("identity", TEXT),
        ("br", TEXT),  # never asked for: passed on as it is, as httpx does
    ],
)
async def test_each_encoding_decodes_in_bounded_pieces(encoding: str, body: bytes) -> None:
    got = await pieces(response(body, encoding), 4096)
    assert b"".join(got) == TEXT
    if encoding not in ("identity", "br"):
        assert max(len(p) for p in got) <= 4096


async def test_a_bomb_is_inflated_only_as_far_as_it_is_read() -> None:
    bomb = gzip.compress(b"\0" * (64 << 20))  # 64 MiB in ~64 KB, in one read
    stream = decoded(response(bomb, "gzip", reads=1), 1 << 16)
    first = await anext(stream)
    await stream.aclose()
    assert len(first) == 1 << 16


async def test_a_body_that_is_not_what_it_says_is_a_decoding_error() -> None:
    with pytest.raises(httpx.DecodingError):
        await pieces(response(b"this is not gzip at all " * 40, "gzip"), 4096)
