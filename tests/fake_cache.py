"""A provider's prompt cache, as the fake gateway bills it under a base URL with `/cache/` in its path
(issue 42; rfcs/0005-performance.md, "What an agent session costs").

Two rules, by the model id's provider:
- **Explicit** (`anthropic/`, `minimax/`): a prompt is cached only at breakpoints, which the gateway
  places when the body asks for `caching: "auto"` (top level, as the gateway documents it, or in
  `providerOptions.gateway`, as older examples put it): the last block, the block before the last
  user-role item (for Anthropic a `function_call_output` is a user message; with none before it, the
  system block), and, with `cache_anchor_items: N`, the end of the first N input items; a bad N is
  ignored, as the gateway ignores it. Without `caching` there are no breakpoints: nothing is read or
  written. The blocks, in the order Anthropic renders a prompt: each tool, the instructions (the
  system block), each input item. A request reads the longest cached prefix that ends at a block
  boundary at most LOOKBACK blocks before one of its breakpoints (Anthropic's automatic prefix
  check), and writes a cache entry at each breakpoint whose prefix has at least MIN_TOKENS tokens;
  what it writes is billed from the end of what it read to its last breakpoint.
- **Implicit** (`openai/`, `google/`, `deepseek/`, `xai/`): no markers; a request reads the longest
  prefix it shares with an earlier request of the same model and the same `prompt_cache_key` (without
  a key, with any earlier request of that model), in STEP-token steps from MIN_TOKENS on. Nothing
  is billed as a write.

An entry is the hash of the exact prefix (every block up to it, each as canonical JSON: sorted keys,
no spaces, UTF-8) per model, and lives TTL seconds from its last write or read, on a clock the caller
gives (tests advance their own). Tokens are o200k (tiktoken, the sidecar's shipped ranks) over each
block's canonical JSON. What each request read and wrote is recorded in the fake's request log
(`cache`), with what the byte-identity check needs: the hash of the raw body outside its `input`
array, and a hash chain over the raw bytes of each input item.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway_lm.tokens.tokenizer import encoding

EXPLICIT = ("anthropic/", "minimax/")
IMPLICIT = ("openai/", "google/", "deepseek/", "xai/")
TTL = 300.0  # Anthropic's default 5-minute cache; OpenAI keeps a prefix 5–10 minutes idle
MIN_TOKENS = 1024  # the shortest prefix either provider caches (Claude Sonnet/Opus 4; OpenAI)
LOOKBACK = 20  # block boundaries Anthropic checks before a breakpoint for an earlier entry
STEP = 128  # OpenAI's cache hits grow in 128-token steps
MAX_ENTRIES = 50_000  # explicit entries kept; the oldest go first past it
MAX_REMEMBERED = 200  # earlier requests an implicit read compares against
MAX_MEMO_TOKENS = 20_000_000  # the per-block token memo is dropped past this many tokens

# The models listed under `/cache/`: Anthropic's prices (reads 0.1×, 5-minute writes 1.25× input),
# and an implicit-cache model priced as OpenAI prices reads (0.1× input, no write price).
CACHE_MODELS = [
    {
        "id": "anthropic/fake-claude",
        "name": "Fake Claude (prompt cache)",
        "type": "language",
        "owned_by": "anthropic",
        "context_window": 200000,
        "max_tokens": 32000,
        "tags": ["tool-use"],
        "pricing": {
            "input": "0.000003",
            "output": "0.000015",
            "input_cache_read": "0.0000003",
            "input_cache_write": "0.00000375",
        },
    },
    {
        "id": "openai/fake-gpt",
        "name": "Fake GPT (prompt cache)",
        "type": "language",
        "owned_by": "openai",
        "context_window": 400000,
        "max_tokens": 32000,
        "tags": ["tool-use"],
        "pricing": {"input": "0.00000125", "output": "0.00001", "input_cache_read": "0.000000125"},
    },
]


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def rule_of(model: str) -> str:
    if model.startswith(EXPLICIT):
        return "explicit"
    if model.startswith(IMPLICIT):
        return "implicit"
    return "none"


def caching_asked(body: dict[str, Any]) -> bool:
    """`caching: "auto"` at the top level, or in `providerOptions.gateway` (older examples' place)."""
    if body.get("caching") == "auto":
        return True
    options = body.get("providerOptions")
    gateway = options.get("gateway") if isinstance(options, dict) else None
    return isinstance(gateway, dict) and gateway.get("caching") == "auto"


def blocks_of(body: dict[str, Any]) -> tuple[list[str], int, bool]:
    """The prompt's blocks as canonical JSON, in Anthropic's order; the index of the first input item;
    whether there is a system block."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    blocks = [canonical({"tool": t}) for t in tools]
    instructions = body.get("instructions")
    system = isinstance(instructions, str) and instructions != ""
    if system:
        blocks.append(canonical({"system": instructions}))
    first_item = len(blocks)
    blocks += [canonical(item) for item in body.get("input") or []]
    return blocks, first_item, system


def is_user_role(item: Any) -> bool:
    """A user message, or a tool's result: Anthropic carries `tool_result` blocks in user messages."""
    if not isinstance(item, dict):
        return False
    return item.get("type") == "function_call_output" or (
        item.get("type", "message") == "message" and item.get("role") == "user"
    )


def breakpoints(body: dict[str, Any], first_item: int, system: bool, count: int) -> list[int]:
    """The block indices `caching: "auto"` marks (ascending); none without it."""
    if not caching_asked(body) or count == 0:
        return []
    items = body.get("input") or []
    points = {count - 1}
    last_user = next((i for i in range(len(items) - 1, -1, -1) if is_user_role(items[i])), None)
    if last_user is not None and last_user > 0:
        points.add(first_item + last_user - 1)
    elif system:
        points.add(first_item - 1)
    anchor = body.get("cache_anchor_items")
    if isinstance(anchor, int) and not isinstance(anchor, bool) and 1 <= anchor <= len(items):
        points.add(first_item + anchor - 1)
    return sorted(points)


_WS = re.compile(r"[ \t\n\r]*")


def _skip(text: str, at: int) -> int:
    """The index past JSON whitespace from `at` (the pattern matches the empty string too)."""
    match = _WS.match(text, at)
    return match.end() if match else at


def raw_layout(raw: bytes) -> tuple[str, list[str]]:
    """The hash of the raw body with its `input` array's bytes cut out, and a hash chain over the raw
    bytes of each input item: two requests whose outside hashes are equal and whose chains agree up
    to the first's length are byte-identical but for the items the second appended."""
    text = raw.decode("utf-8")
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    if text[at : at + 1] != "{":
        raise ValueError("the body is not a JSON object")
    at += 1
    span: tuple[int, int] | None = None
    while True:
        at = _skip(text, at)
        if text[at : at + 1] == "}":
            break
        key, at = decoder.raw_decode(text, at)
        at = _skip(text, at)
        at += 1  # the colon
        at = _skip(text, at)
        start = at
        _, at = decoder.raw_decode(text, at)
        if key == "input":
            span = (start, at)
        at = _skip(text, at)
        if text[at : at + 1] == ",":
            at += 1
    if span is None:
        return _sha(text), []
    chain, link = [], ""
    at = span[0] + 1
    while True:
        at = _skip(text, at)
        if text[at] == "]":
            break
        start = at
        _, at = decoder.raw_decode(text, at)
        link = _sha(link + text[start:at])
        chain.append(link)
        at = _skip(text, at)
        if text[at] == ",":
            at += 1
    return _sha(text[: span[0]] + text[span[1] :]), chain


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Seen:
    """An earlier request, for implicit reads: its prefix hashes and running token counts."""

    model: str
    key: str | None
    chain: list[str]
    blocks: list[str]
    running: list[int]
    expires: float


@dataclass
class PromptCache:
    """Every provider's cache of one fake gateway. Thread-safe: the server answers on many threads."""

    clock: Callable[[], float] = time.monotonic
    entries: dict[str, tuple[float, int]] = field(default_factory=dict)  # prefix hash → (expiry, tokens)
    seen: deque[_Seen] = field(default_factory=lambda: deque(maxlen=MAX_REMEMBERED))
    _tokens: dict[str, array[int]] = field(default_factory=dict)
    _memo_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self._lock:
            self.entries.clear()
            self.seen.clear()

    def serve(self, body: dict[str, Any], raw: bytes, affinity: str | None = None) -> dict[str, Any]:
        """What this request read and wrote (the request log's `cache`), `usage` among it."""
        model = str(body.get("model", ""))
        rule = rule_of(model)
        blocks, first_item, system = blocks_of(body)
        hashes = [_sha(b) for b in blocks]
        with self._lock:
            counts = [len(self._encoded(h, b)) for h, b in zip(hashes, blocks, strict=True)]
            running, total = [], 0
            for n in counts:
                total += n
                running.append(total)
            chain, link = [], _sha(model)
            for h in hashes:
                link = _sha(link + h)
                chain.append(link)
            points = breakpoints(body, first_item, system, len(blocks)) if rule == "explicit" else []
            key = body.get("prompt_cache_key")
            key = key if isinstance(key, str) else None
            if rule == "explicit":
                read, write = self._explicit(chain, running, points)
            elif rule == "implicit":
                read, write = self._implicit(model, key, chain, hashes, running), 0
            else:
                read, write = 0, 0
        try:
            outside, items = raw_layout(raw)
        except (ValueError, IndexError):
            outside, items = "", []
        return {
            "rule": rule,
            "caching": caching_asked(body),
            "blocks": len(blocks),
            "breakpoints": points,
            "prompt_cache_key": key,
            "affinity": affinity,
            "input_tokens": total,
            "cached_tokens": read,
            "cache_write_tokens": write,
            "outside_sha": outside,
            "item_shas": items,
        }

    def _encoded(self, digest: str, block: str) -> array[int]:
        tokens = self._tokens.get(digest)
        if tokens is None:
            if self._memo_tokens > MAX_MEMO_TOKENS:
                self._tokens.clear()
                self._memo_tokens = 0
            tokens = self._tokens[digest] = array("I", encoding("o200k_base").encode_ordinary(block))
            self._memo_tokens += len(tokens)
        return tokens

    def _live(self, prefix: str, now: float) -> bool:
        entry = self.entries.get(prefix)
        return entry is not None and entry[0] > now

    def _explicit(self, chain: list[str], running: list[int], points: list[int]) -> tuple[int, int]:
        now = self.clock()
        read_end = -1
        for point in points:
            for end in range(point, max(-1, point - LOOKBACK - 1), -1):
                if self._live(chain[end], now):
                    read_end = max(read_end, end)
                    break
        read = running[read_end] if read_end >= 0 else 0
        if read_end >= 0:
            self.entries[chain[read_end]] = (now + TTL, read)
        for point in points:
            if running[point] >= MIN_TOKENS:
                self.entries.pop(chain[point], None)  # re-inserted: the newest is last, for the bound below
                self.entries[chain[point]] = (now + TTL, running[point])
        while len(self.entries) > MAX_ENTRIES:
            del self.entries[next(iter(self.entries))]
        if not points or running[points[-1]] < MIN_TOKENS:
            return read, 0
        return read, max(0, running[points[-1]] - read)

    def _implicit(self, model: str, key: str | None, chain: list[str], hashes: list[str], running: list[int]) -> int:
        now = self.clock()
        best, source = 0, None
        for earlier in self.seen:
            if earlier.model != model or earlier.expires <= now or (key is not None and earlier.key != key):
                continue
            shared = self._shared_tokens(chain, hashes, running, earlier)
            if shared > best:
                best, source = shared, earlier
        cached = (best // STEP) * STEP if best >= MIN_TOKENS else 0
        if source is not None and cached:
            source.expires = now + TTL
        self.seen.append(_Seen(model, key, chain, hashes, running, now + TTL))
        return cached

    def _shared_tokens(self, chain: list[str], hashes: list[str], running: list[int], earlier: _Seen) -> int:
        """Tokens of the longest common prefix: whole blocks, then the shared start of the first that differs."""
        same = 0
        limit = min(len(chain), len(earlier.chain))
        while same < limit and chain[same] == earlier.chain[same]:
            same += 1
        shared = running[same - 1] if same else 0
        if same < limit:
            mine, theirs = self._tokens.get(hashes[same]), self._tokens.get(earlier.blocks[same])
            if mine is not None and theirs is not None:
                n = 0
                for a, b in zip(mine, theirs, strict=False):
                    if a != b:
                        break
                    n += 1
                shared += n
        return shared


def usage(record: dict[str, Any], output_tokens: int = 7) -> dict[str, Any]:
    """The usage the gateway reports for it: input tokens include those read and written."""
    return {
        "input_tokens": record["input_tokens"],
        "output_tokens": output_tokens,
        "total_tokens": record["input_tokens"] + output_tokens,
        "input_tokens_details": {
            "cached_tokens": record["cached_tokens"],
            "cache_write_tokens": record["cache_write_tokens"],
        },
        "output_tokens_details": {"reasoning_tokens": 0},
    }
