"""Time and memory stay bounded whatever the gateway does: the real sidecar against a fake gateway
that trickles, stalls, floods and sends what no gateway should. Each case adds a reliability row."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from conftest import record, text_of
from fake_gateway import FakeServer
from sidecar_client import Sidecar

pytestmark = pytest.mark.asyncio(loop_scope="module")
DEFAULTS = {"idleTimeout": 120, "requestTimeout": 900, "maxRetries": 2, "connectTimeout": 10}


class RoomyServer(FakeServer):
    request_queue_size = 256  # 110 connections at once must not overflow the listen backlog


@pytest.fixture(scope="module")
def hostile() -> Iterator[FakeServer]:
    server = RoomyServer().start()
    yield server
    server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def side(hostile: FakeServer) -> AsyncIterator[Sidecar]:
    sidecar = Sidecar()
    await sidecar.start(hostile.base_url, DEFAULTS)
    yield sidecar
    await sidecar.stop()


_ids = iter(range(1, 10_000))


async def chat(side: Sidecar, scenario: str, **settings: Any) -> tuple[Any, list[dict[str, Any]], float]:
    """One chat with `settings` in force; its result or error, its parts, and how long it took."""
    if settings:
        await side.request("gateway/configure", {"settings": settings})
    rid = f"bound-{next(_ids)}"
    params = {
        "requestId": rid,
        "model": "fake/text",
        "messages": [{"role": 1, "content": [{"type": "text", "value": f"[scenario:{scenario}] hi"}]}],
    }
    started = time.monotonic()
    try:
        result: Any = await side.request("gateway/chat", params)
    except JsonRpcException as error:
        result = error
    finally:
        if settings:
            await side.request("gateway/configure", {"settings": DEFAULTS})
    return result, side.parts.get(rid, []), time.monotonic() - started


def kind_of(result: Any) -> str:
    return str(result.data["kind"]) if isinstance(result, JsonRpcException) else "no error"


def peak_mib(side: Sidecar, reset: bool = False) -> float:
    """The sidecar's peak resident memory; `reset` starts a new peak from what it holds now."""
    pid = side.client._server.pid  # type: ignore[union-attr]
    if reset:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


@pytest.mark.parametrize(
    ("scenario", "label"),
    [("keepalive", "keepalive comments every 50 ms"), ("trickle", "one byte every 50 ms")],
)
async def test_data_free_bytes_do_not_defeat_the_idle_timeout(side: Sidecar, scenario: str, label: str) -> None:
    result, parts, took = await chat(side, scenario, idleTimeout=0.5)
    message = getattr(result, "message", "")
    ok = kind_of(result) == "timeout" and "idleTimeout" in message and took < 2 and text_of(parts) == "Partial"
    record(label, "timeout naming idleTimeout (0.5 s) in < 2 s", f"{kind_of(result)} after {took:.2f} s", ok)


async def test_an_endless_answer_meets_the_request_timeout(side: Sidecar) -> None:
    result, parts, took = await chat(side, "drip", requestTimeout=1)
    message = getattr(result, "message", "")
    ok = kind_of(result) == "timeout" and "requestTimeout" in message and took < 3 and "tick" in text_of(parts)
    record(
        "data every 50 ms, forever",
        "timeout naming requestTimeout (1 s), text kept",
        f"{kind_of(result)} after {took:.2f} s",
        ok,
    )


async def test_retries_share_one_time_budget(side: Sidecar, hostile: FakeServer) -> None:
    before = len(hostile.gateway.requests)
    result, _, took = await chat(side, "hang-headers", idleTimeout=0.5, maxRetries=2)
    attempts = len(hostile.gateway.requests) - before
    ok = kind_of(result) == "timeout" and "idleTimeout" in getattr(result, "message", "") and took < 1.5
    record(
        "no headers ever, 2 retries allowed",
        "timeout within one idleTimeout (0.5 s), not three",
        f"{kind_of(result)} after {took:.2f} s, {attempts} attempt(s)",
        ok,
    )


async def test_a_huge_sse_line_is_refused_without_holding_it(side: Sidecar) -> None:
    before = peak_mib(side, reset=True)
    result, _, took = await chat(side, "huge-line")
    grew = peak_mib(side) - before
    message = getattr(result, "message", "")
    ok = kind_of(result) == "protocol" and "16 MiB" in message and grew < 64
    record(
        "one 100 MiB SSE line",
        "protocol naming the 16 MiB cap, peak +< 64 MiB",
        f"{kind_of(result)}, peak +{grew:.0f} MiB, {took:.2f} s",
        ok,
    )


async def test_a_huge_error_body_is_not_read_whole(side: Sidecar) -> None:
    before = peak_mib(side, reset=True)
    result, _, _ = await chat(side, "big-error", maxRetries=0)
    grew = peak_mib(side) - before
    message = getattr(result, "message", "")
    ok = kind_of(result) == "upstream" and "Overloaded" in message and len(message) < 1000 and grew < 16
    record("a 50 MB error body", "upstream, short message, peak +< 16 MiB", f"{kind_of(result)}, +{grew:.0f} MiB", ok)


async def test_a_gzip_bomb_error_body_is_cut_as_it_inflates(side: Sidecar) -> None:
    """63 KiB on the wire that inflate to 64 MiB: the 64 KiB cap counts decoded bytes, and nothing
    past them is ever inflated (httpx's decoder inflated a whole network read first)."""
    before = peak_mib(side, reset=True)
    result, _, _ = await chat(side, "gzip-bomb-error", maxRetries=0)
    grew = peak_mib(side) - before
    message = getattr(result, "message", "")
    ok = kind_of(result) == "upstream" and "Overloaded" in message and len(message) < 1000 and grew < 16
    record("a gzip bomb as an error body (64 MiB)", "upstream, short message, peak +< 16 MiB", f"+{grew:.0f} MiB", ok)


async def test_a_gzip_bomb_event_stream_meets_the_event_cap(side: Sidecar) -> None:
    before = peak_mib(side, reset=True)
    result, _, took = await chat(side, "gzip-bomb-stream", maxRetries=0)
    grew = peak_mib(side) - before
    ok = kind_of(result) == "protocol" and "16 MiB" in getattr(result, "message", "") and grew < 64
    record(
        "a gzip bomb as an event stream (a 256 MiB line)",
        "protocol naming the 16 MiB cap, peak +< 64 MiB",
        f"{kind_of(result)}, peak +{grew:.0f} MiB, {took:.2f} s",
        ok,
    )


async def test_a_bad_gzip_body_is_a_protocol_error(side: Sidecar) -> None:
    result, _, _ = await chat(side, "bad-gzip", maxRetries=0)
    ok = kind_of(result) == "protocol" and "gzip" in getattr(result, "message", "")
    record("an undecodable gzip body", "protocol, names the encoding", kind_of(result), ok)


async def test_a_byte_order_mark_does_not_cost_the_first_event(side: Sidecar) -> None:
    result, parts, _ = await chat(side, "bom")
    ok = isinstance(result, dict) and text_of(parts) == "Hello world"
    record("a BOM before the first data: line", "'Hello world'", repr(text_of(parts)), ok)


async def test_many_output_items_are_all_shown(side: Sidecar) -> None:
    result, parts, took = await chat(side, "many-items")
    thinking = sum(1 for p in parts if p["type"] == "thinking")
    # The time is printed, not asserted (a loaded machine is no regression; the bench measures): the
    # bound only stops a stream that would never end.
    ok = isinstance(result, dict) and thinking == 12_000 and text_of(parts).endswith("done") and took < 60
    record(
        "12,000 reasoning items (4 MB)",
        "every item shown, within 60 s (a hang's bound)",
        f"{thinking} thinking parts in {took:.2f} s",
        ok,
    )


async def test_arguments_nested_too_deeply_are_passed_on_as_invalid(side: Sidecar) -> None:
    result, parts, _ = await chat(side, "deep-arguments")
    call = next((p for p in parts if p["type"] == "toolCall"), None)
    invalid = call is not None and list(call["input"]) == ["invalidArguments"]
    reason = result.get("finishReason") if isinstance(result, dict) else kind_of(result)
    record(
        "tool arguments nested 5,000 deep",
        "a call with invalidArguments, finish toolCalls",
        f"{reason}, invalidArguments={invalid}",
        invalid and reason == "toolCalls",
    )


async def test_more_streams_than_the_old_pool_limit(side: Sidecar) -> None:
    await side.request("gateway/configure", {"settings": {"connectTimeout": 0.5, "maxRetries": 0}})
    try:
        results = await asyncio.gather(*(chat(side, "hold") for _ in range(110)))
    finally:
        await side.request("gateway/configure", {"settings": DEFAULTS})
    answered = sum(1 for result, parts, _ in results if isinstance(result, dict) and text_of(parts) == "held")
    kinds = sorted({kind_of(result) for result, _, _ in results if not isinstance(result, dict)})
    record(
        "110 streams at once (each 1 s)",
        "all 110 answered",
        f"{answered} answered" + (f", errors: {', '.join(kinds)}" if kinds else ""),
        answered == 110,
    )


async def test_two_chats_with_one_request_id(side: Sidecar) -> None:
    params = {
        "requestId": "twin",
        "model": "fake/text",
        "messages": [{"role": 1, "content": [{"type": "text", "value": "[scenario:hold] hi"}]}],
    }
    first = asyncio.ensure_future(side.request("gateway/chat", params))
    await asyncio.sleep(0.2)
    try:
        await side.request("gateway/chat", params)
        second = "accepted"
    except JsonRpcException as error:
        second = f"{error.code} {error.data.get('kind') if isinstance(error.data, dict) else ''}"
    answer = await first
    texts = text_of(side.parts.get("twin", []))
    ok = second == "-32602 bad_request" and answer["finishReason"] == "stop" and texts == "held"
    record("a second chat with a requestId in use", "-32602 bad_request; the first unharmed", second, ok)
