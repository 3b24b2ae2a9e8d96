"""The private library internals the sidecar relies on (rfcs/0005-performance.md, "Private hooks").

One test per hook, written to fail when a new version of the library moves the internal away: each
checks what the hook needs from the library, through the library's own public entry points where
there are any, not merely that our code still runs.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import tiktoken
from tiktoken_ext import openai_public  # type: ignore[import-untyped]

from gateway_lm.gateway.httpx_sse_hooks import SSELineDecoder
from gateway_lm.tokens.tiktoken_hooks import encoding_spec, without_python_ranks
from gateway_lm.tokens.tokenizer import shipped_ranks


def sent(out: io.BytesIO) -> list[Any]:
    """The messages written, parsed strictly (no NaN or Infinity), each with its LSP header."""
    messages, data = [], out.getvalue()
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        messages.append(json.loads(rest[:length], parse_constant=lambda name: pytest.fail(f"{name} on the wire")))
        data = rest[length:]
    return messages


# ---- httpx-sse ----


def test_httpx_sse_decoders_and_the_unfinished_line() -> None:
    """`_decoders.SSELineDecoder` and its `buffer`: the line not finished yet."""
    lines = SSELineDecoder()
    assert lines.decode('data: {"a"') == []
    assert "".join(lines.buffer) == 'data: {"a"'
    assert lines.decode(": 1}\n\ndata: tail") == ['data: {"a": 1}', ""]
    assert "".join(lines.buffer) == "data: tail"


# ---- tiktoken ----


def test_tiktoken_constructors_load_their_ranks_through_the_module_global() -> None:
    """`openai_public.load_tiktoken_bpe`: replaced, it decides the ranks, and nothing is fetched."""
    original = openai_public.load_tiktoken_bpe
    ours = {b"a": 0}
    for name in ("o200k_base", "cl100k_base"):
        spec = encoding_spec(name, ours)
        assert spec["mergeable_ranks"] is ours and spec["name"] == name
    assert openai_public.load_tiktoken_bpe is original


def test_tiktoken_keeps_the_python_ranks_in_mergeable_ranks_and_encodes_without_them() -> None:
    """`Encoding._mergeable_ranks`: the attribute that holds the Python dict (so emptying it frees
    ~23 MB), and one that encoding never reads."""
    ranks = shipped_ranks("o200k_base")
    spec = encoding_spec("o200k_base", ranks)
    built = tiktoken.Encoding(**spec)
    assert vars(built)["_mergeable_ranks"] is ranks
    text = "Token counts with tiktoken, <|endoftext|> as text: naïve café 🙂"
    expected = built.encode_ordinary(text)
    assert without_python_ranks(built) is built and vars(built)["_mergeable_ranks"] == {}
    assert built.encode_ordinary(text) == expected
