"""The private library internals the sidecar relies on (rfcs/0005-performance.md, "Private hooks").

One test per hook, written to fail when a new version of the library moves the internal away: each
checks what the hook needs from the library, through the library's own public entry points where
there are any, not merely that our code still runs.
"""

from __future__ import annotations

import io
import json
import logging
import math
from typing import Any

import pytest
import tiktoken
from pygls.io_ import StdoutWriter
from tiktoken_ext import openai_public  # type: ignore[import-untyped]

from gateway_lm.httpx_sse_hooks import SSELineDecoder
from gateway_lm.pygls_hooks import stop_event
from gateway_lm.rpc.methods import build_server
from gateway_lm.tiktoken_hooks import encoding_spec, without_python_ranks
from gateway_lm.tokenizer import shipped_ranks


def sent(out: io.BytesIO) -> list[Any]:
    """The messages written, parsed strictly (no NaN or Infinity), each with its LSP header."""
    messages, data = [], out.getvalue()
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        messages.append(json.loads(rest[:length], parse_constant=lambda name: pytest.fail(f"{name} on the wire")))
        data = rest[length:]
    return messages


# ---- pygls ----


def test_pygls_writes_its_own_answers_and_notifications_through_send_data(caplog: pytest.LogCaptureFixture) -> None:
    """`_send_data`, `_serialize_message` and `_include_headers`: a response pygls makes for a
    handler, and a notification sent with its public `notify()`, both pass our strict encoder."""
    server, _ = build_server()

    @server.feature("test/nan")
    def nan(params: Any) -> dict[str, float]:
        return {"factor": float("nan")}

    out = io.BytesIO()
    server.protocol.set_writer(StdoutWriter(out))
    with caplog.at_level(logging.ERROR, logger="gateway_lm"):
        request = {"jsonrpc": "2.0", "id": 3, "method": "test/nan", "params": None}
        server.protocol.handle_message(server.protocol.structure_message(request))
        server.protocol.notify("gateway/calibration", {"model": "m", "factor": math.inf})
        server.protocol.notify("gateway/calibration", {"model": "m", "factor": 1.5})
    answer, notification = sent(out)
    assert answer["id"] == 3 and answer["error"]["data"]["kind"] == "internal"
    assert notification["params"] == {"model": "m", "factor": 1.5}
    assert "dropped a gateway/calibration message" in caplog.text


def test_pygls_shutdown_sets_the_stop_event_our_loop_watches() -> None:
    """`_stop_event`: what `shutdown()` sets."""
    server, _ = build_server()
    stop = stop_event(server)
    assert not stop.is_set()
    server.shutdown()  # type: ignore[no-untyped-call]
    assert stop.is_set()


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
