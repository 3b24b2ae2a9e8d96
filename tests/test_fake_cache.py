"""The fake gateway's prompt cache (fake_cache.py): the rules the cost bench and tests/ts/cache.test.ts
rest on — where `caching: "auto"` puts breakpoints, the 20-block lookback, the 5-minute TTL, the
1,024-token minimum, the implicit caches' keys and steps — and that its answer carries the usage."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from fake_cache import (
    LOOKBACK,
    MIN_TOKENS,
    STEP,
    TTL,
    PromptCache,
    blocks_of,
    breakpoints,
    raw_layout,
)
from fake_gateway import FakeServer
from gateway_lm.tokens.tokenizer import encoding

CLAUDE = "anthropic/fake-claude"
GPT = "openai/fake-gpt"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def text(n: int, word: str = "cache") -> str:
    return " ".join([word] * n)  # about one o200k token a word


def user(n: int = 10, word: str = "cache") -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text(n, word)}]}


def turn(step: int, n: int = 10) -> list[dict[str, Any]]:
    """An agent step: the answer's sentence, its tool call, the tool's result."""
    call = f"call_{step}"
    return [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Step {step}."}]},
        {"type": "function_call", "call_id": call, "name": "read_file", "arguments": '{"path": "a.py"}'},
        {"type": "function_call_output", "call_id": call, "output": text(n, f"line{step}")},
    ]


TOOLS = [{"type": "function", "name": "read_file", "description": "Reads a file.", "parameters": {"type": "object"}}]


def body(items: list[dict[str, Any]], model: str = CLAUDE, system: int = 1500, **extra: Any) -> dict[str, Any]:
    return {"model": model, "input": items, "instructions": text(system, "rule"), "tools": TOOLS, **extra}


def serve(cache: PromptCache, b: dict[str, Any]) -> dict[str, Any]:
    return cache.serve(b, json.dumps(b).encode())


def tokens_through(b: dict[str, Any], last_block: int) -> int:
    blocks, _, _ = blocks_of(b)
    return sum(len(encoding("o200k_base").encode_ordinary(x)) for x in blocks[: last_block + 1])


def test_breakpoints_are_where_caching_auto_puts_them() -> None:
    items = [user(), *turn(1), *turn(2)]
    b = body(items, caching="auto")
    blocks, first, system = blocks_of(b)
    assert (first, system, len(blocks)) == (2, True, 2 + 7)
    # the last item; the item before the last user-role item (a tool result: the call before it)
    assert breakpoints(b, first, system, len(blocks)) == [7, 8]
    # the older place, providerOptions.gateway, counts too; an anchor adds the end of the first N items
    older = body(items, providerOptions={"gateway": {"caching": "auto"}}, cache_anchor_items=1)
    assert breakpoints(older, first, system, len(blocks)) == [2, 7, 8]
    for bad in (0, 99, "1", True, 1.5):  # ignored, as the gateway ignores a bad anchor
        assert breakpoints(body(items, caching="auto", cache_anchor_items=bad), first, system, len(blocks)) == [7, 8]
    # the last user message is the first item: the system block instead
    assert breakpoints(body([user()], caching="auto"), first, system, 3) == [1, 2]
    assert breakpoints(body(items), first, system, len(blocks)) == []  # no caching, no breakpoints
    assert breakpoints(body(items, caching="on"), first, system, len(blocks)) == []


def test_without_caching_nothing_is_read_or_written() -> None:
    cache = PromptCache(Clock())
    b = body([user(2000)])
    for _ in range(2):
        record = serve(cache, b)
        assert (record["cached_tokens"], record["cache_write_tokens"], record["breakpoints"]) == (0, 0, [])
    assert record["input_tokens"] == tokens_through(b, 2)


def test_a_session_reads_the_previous_request_and_writes_what_is_new() -> None:
    cache = PromptCache(Clock())
    items = [user(), *turn(1, 300)]
    first = body(items, caching="auto")
    one = serve(cache, first)
    assert one["cached_tokens"] == 0
    assert one["cache_write_tokens"] == one["input_tokens"] == tokens_through(first, 5)
    second = body([*items, *turn(2, 300)], caching="auto")
    two = serve(cache, second)
    assert two["cached_tokens"] == one["input_tokens"], "the previous request's whole prefix"
    assert two["cache_write_tokens"] == two["input_tokens"] - one["input_tokens"]
    assert serve(cache, second)["cached_tokens"] == two["input_tokens"], "the same request again: all of it"
    assert serve(cache, body([*items, *turn(2, 300)], model="minimax/fake", caching="auto"))["cached_tokens"] == 0


@pytest.mark.parametrize(("added", "hit"), [(LOOKBACK + 1, True), (LOOKBACK + 2, False)])
def test_an_entry_is_found_at_most_twenty_blocks_before_a_breakpoint(added: int, hit: bool) -> None:
    """All user messages: the breakpoints are the last block and the one before it, so an entry
    `added` blocks back is LOOKBACK blocks before the second breakpoint when added = LOOKBACK + 1."""
    cache = PromptCache(Clock())
    items = [user(400)]
    one = serve(cache, body(items, caching="auto"))
    two = serve(cache, body([*items, *[user(5, f"w{i}") for i in range(added)]], caching="auto"))
    assert two["cached_tokens"] == (one["input_tokens"] if hit else 0)


def test_entries_live_five_minutes_from_their_last_use() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    b = body([user(400)], caching="auto")
    total = serve(cache, b)["input_tokens"]
    clock.now += TTL - 1
    assert serve(cache, b)["cached_tokens"] == total, "read within the TTL, which it renews"
    clock.now += TTL - 1
    assert serve(cache, b)["cached_tokens"] == total
    clock.now += TTL + 1
    expired = serve(cache, b)
    assert (expired["cached_tokens"], expired["cache_write_tokens"]) == (0, total)


def test_a_prefix_under_the_minimum_is_not_cached() -> None:
    cache = PromptCache(Clock())
    short = body([user(50)], system=50, caching="auto")
    assert serve(cache, short)["input_tokens"] < MIN_TOKENS
    again = serve(cache, short)
    assert (again["cached_tokens"], again["cache_write_tokens"]) == (0, 0)


def test_implicit_caches_share_a_prefix_by_key_in_steps() -> None:
    cache = PromptCache(Clock())
    items = [user(), *turn(1, 600)]
    one = serve(cache, body(items, model=GPT, prompt_cache_key="conv-a"))
    assert (one["cached_tokens"], one["cache_write_tokens"], one["breakpoints"]) == (0, 0, [])
    longer = body([*items, *turn(2, 600)], model=GPT, prompt_cache_key="conv-a")
    two = serve(cache, longer)
    assert two["cached_tokens"] % STEP == 0
    assert one["input_tokens"] - STEP < two["cached_tokens"] <= one["input_tokens"]
    assert two["cache_write_tokens"] == 0
    other_key = serve(cache, body([*items, *turn(2, 600)], model=GPT, prompt_cache_key="conv-b"))
    assert other_key["cached_tokens"] == 0, "another conversation's key reads nothing of this one's"
    no_key = serve(cache, body([*items, *turn(3, 600)], model=GPT))
    assert no_key["cached_tokens"] > 0, "without a key, any earlier request of the model"
    grown = body([*items, *turn(2, 600)], model=GPT, prompt_cache_key="conv-a", system=1501)
    assert serve(cache, grown)["cached_tokens"] == (tokens_through(grown, 0) + 1500) // STEP * STEP, (
        "up to the first token that differs, inside a block too"
    )
    dated = body(items, model=GPT, prompt_cache_key="conv-a")
    dated["instructions"] = "Today is Monday. " + dated["instructions"]
    assert serve(cache, dated)["cached_tokens"] == 0, "the tools alone are under the minimum"


def test_raw_layout_tells_an_appended_item_from_any_other_change() -> None:
    first = b'{"model": "m", "input": [{"a": 1}, {"b": 2}], "tools": [1, 2]}'
    appended = b'{"model": "m", "input": [{"a": 1}, {"b": 2}, {"c": 3}], "tools": [1, 2]}'
    reordered = b'{"model": "m", "input": [{"a": 1}, {"b": 2}, {"c": 3}], "tools": [2, 1]}'
    spaced = b'{"model": "m", "input": [{"a":1}, {"b": 2}, {"c": 3}], "tools": [1, 2]}'
    outside, chain = raw_layout(first)
    assert raw_layout(appended)[0] == outside and raw_layout(appended)[1][:2] == chain
    assert raw_layout(reordered)[0] != outside
    assert raw_layout(spaced)[1][0] != chain[0], "bytes, not values"


def test_the_gateway_reports_and_logs_what_was_read_and_written() -> None:
    server = FakeServer().start()
    try:
        base = server.base_url.removesuffix("/v1") + "/cache/v1"
        with urllib.request.urlopen(f"{base}/models", timeout=10) as response:
            listed = [m["id"] for m in json.load(response)["data"]]
        assert CLAUDE in listed and GPT in listed

        def post(b: dict[str, Any]) -> dict[str, Any]:
            request = urllib.request.Request(
                f"{base}/responses",
                json.dumps(b).encode(),
                {"content-type": "application/json", "x-session-affinity": "conv-1"},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                events = [
                    json.loads(line[6:]) for line in response.read().decode().splitlines() if line[:6] == "data: "
                ]
            return next(e for e in events if e["type"] == "response.completed")["response"]["usage"]

        b = body([user(400)], caching="auto")
        post(b)
        usage = post(b)
        details = usage["input_tokens_details"]
        assert details == {"cached_tokens": usage["input_tokens"], "cache_write_tokens": 0}
        log = [e["cache"] for e in server.gateway.requests]
        assert [e["cached_tokens"] for e in log] == [0, usage["input_tokens"]]
        assert log[0]["affinity"] == "conv-1"
    finally:
        server.stop()
