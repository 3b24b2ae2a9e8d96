"""The last guard before a request leaves: it must fit the model's real input limit (rfcs/0004, "Fitting a request").

Copilot budgets a turn against the window the model had when the user sent it: it reads
`maxInputTokens` once per turn, so a factor learned from the turn's first response moves the window
only from the next turn on. On a model's first agent turn (no factor yet) Copilot can thus send a
prompt the model's tokenizer makes too long, and the turn would fail with "Input is too long". Here
such a request gives up the content of its oldest tool results, oldest first, until it fits, as
providers' own context editing does; the last round's results, which the model is working from, stay
(at least the newest two). A request that fits is sent untouched, but for the results an earlier
request of its conversation was sent with cleared: those are cleared again, the same way, so that the
history before the newest clearing is the same bytes as before and stays in the provider's prompt
cache (rfcs/0011-prompt-cache.md, "One prefix, byte for byte").
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..tokens.tokenizer import count_request, count_text
from .translate import TRANSCRIBED

log = logging.getLogger(__name__)

TRIM_ABOVE = 0.97  # of the limit: the request estimate is good to about ±3 % (rfcs/0004)
TRIM_TO = 0.94  # leaves room for the next tool result before trimming again
KEEP_NEWEST = 2  # at least: the last round's results (parallel calls give several) are all kept
CLEARED = "[This tool result was cleared to keep the conversation within the model's context window.]"
MAX_REMEMBERED = 4096  # cleared results remembered, the least recently cleared out first


@dataclass(frozen=True)
class InputLimit:
    tokens: int  # the model's real input limit (listed, or learned from an overflow error)
    factor: float  # the model's tokens per estimated o200k token (accounting.py)


class ClearedResults:
    """The tool results requests were sent with cleared, by call id and a digest of the output (a call
    id alone may repeat across conversations), within a scope: the model and the input limit it was
    fitted to. Another model, or a larger Context Size chosen in the chat input, is another scope: its
    requests get the results back that fit (the prefix changes once, as any such switch changes it).
    The chat service's, for the life of the sidecar. Fits run on worker threads, several chats at
    once: a lock keeps its two maps in step."""

    def __init__(self, most: int = MAX_REMEMBERED) -> None:
        self._most = most
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        self._ids: dict[str, int] = {}  # call id → how many of `_seen` have it: only those are hashed

    def add(self, item: dict[str, Any], scope: str) -> None:
        """`item`, a result as it was before it was cleared (a transcript's result has no call id)."""
        call_id = item.get("call_id")
        if item.get("type") != "function_call_output" or not isinstance(call_id, str):
            return
        key = (call_id, scope, _digest(item))
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return
            self._seen[key] = None
            self._ids[call_id] = self._ids.get(call_id, 0) + 1
            while len(self._seen) > self._most:
                gone = self._seen.popitem(last=False)[0][0]
                self._ids[gone] -= 1
                if not self._ids[gone]:
                    del self._ids[gone]

    def __len__(self) -> int:
        return len(self._seen)

    def has(self, item: object, scope: str) -> bool:
        """Whether `item` was sent cleared before, in `scope`."""
        if not isinstance(item, dict) or item.get("type") != "function_call_output":
            return False
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or call_id not in self._ids:  # a read of a dict: no lock
            return False
        key = (call_id, scope, _digest(item))
        with self._lock:
            return key in self._seen


def _digest(item: dict[str, Any]) -> str:
    output = json.dumps(item.get("output"), ensure_ascii=False)
    return hashlib.sha256(output.encode("utf-8", "surrogatepass")).hexdigest()


def fit_request(
    body: dict[str, Any],
    model: str,
    limit: InputLimit,
    size: int | None = None,
    cleared: ClearedResults | None = None,
) -> dict[str, Any]:
    """`body`, or a copy whose oldest tool results are cleared so that it fits `limit`. `size`: the
    bytes of the body as it is sent (client.encode_body), when known. `cleared`: the results cleared
    before, cleared again first (whether or not the request needs it), and those cleared now added."""
    scope = f"{model}\n{limit.tokens}"
    if cleared is not None:
        again = _cleared_again(body, cleared, scope)
        size = size if again is body else None
        body = again
    fitted = _fit(body, model, limit, size)
    if cleared is not None and fitted is not body:
        for item, was in zip(fitted["input"], body["input"], strict=True):
            if item is not was:
                cleared.add(was, scope)
    return fitted


def _cleared_again(body: dict[str, Any], cleared: ClearedResults, scope: str) -> dict[str, Any]:
    items = body.get("input")
    if not isinstance(items, list) or not cleared:  # nothing cleared yet: the common case, at once
        return body
    protected = max(KEEP_NEWEST, _last_round(items))
    outputs = [i for i, item in enumerate(items) if _is_tool_result(item)][: -protected or None]
    again = [index for index in outputs if cleared.has(items[index], scope)]
    if not again:
        return body
    fitted = list(items)
    for index in again:
        cleared.add(items[index], scope)  # still in use: the last to go
        fitted[index] = _cleared(items[index])
    return {**body, "input": fitted}


def _fit(body: dict[str, Any], model: str, limit: InputLimit, size: int | None) -> dict[str, Any]:
    if not may_pass(body, limit, size):
        return body
    # Counted only as far as it shows whether the request fits: a count a token under the threshold
    # passes as a bound (tokenizer.count_request), which leaves the newest tool results unencoded.
    estimate = limit.factor * count_request(body, model, TRIM_ABOVE * limit.tokens / limit.factor - 1)
    if estimate <= TRIM_ABOVE * limit.tokens:
        return body
    items = body.get("input")
    if not isinstance(items, list):
        return body
    outputs = [i for i, item in enumerate(items) if _is_tool_result(item)]
    outputs = outputs[: -max(KEEP_NEWEST, _last_round(items)) or None]
    fitted = list(items)
    cleared = 0
    for index in outputs:
        if estimate <= TRIM_TO * limit.tokens:
            break
        freed = count_text(model, _output_text(items[index])) - count_text(model, CLEARED)
        if freed <= 0:
            continue
        fitted[index] = _cleared(items[index])
        estimate -= limit.factor * freed
        cleared += 1
    if not cleared:
        return body
    log.info(
        "%s: cleared the %d oldest tool result(s) so the request fits its %d-token input limit (now about %d)",
        model,
        cleared,
        limit.tokens,
        estimate,
    )
    return {**body, "input": fitted}


def has_tool_results(body: dict[str, Any]) -> bool:
    """Whether fitting could clear anything: only a request with tool results can be fitted."""
    items = body.get("input")
    return isinstance(items, list) and any(_is_tool_result(item) for item in items)


def may_pass(body: dict[str, Any], limit: InputLimit, size: int | None = None) -> bool:
    """Whether the request could pass the trimming threshold at all: a cheap bound before counting.
    A byte-level BPE token is at least one byte of text, and JSON (ASCII-escaped, or in UTF-8 as it is
    sent: `size`) has at least as many characters as the UTF-8 bytes of the text in it, so its length
    bounds the count from above."""
    return limit.factor * (len(json.dumps(body)) if size is None else size) > TRIM_ABOVE * limit.tokens


def _last_round(items: list[Any]) -> int:
    """How many results the last round of tool calls brought: the run of results that ends the input
    (a round's calls come first, then their results)."""
    count = 0
    for item in reversed(items):
        if not _is_tool_result(item):
            break
        count += 1
    return count


def _is_tool_result(item: Any) -> bool:
    return isinstance(item, dict) and (item.get("type") == "function_call_output" or _transcribed(item) is not None)


def _transcribed(item: dict[str, Any]) -> tuple[str, str] | None:
    """A tool result as a summary request's transcript has it (translate.as_transcript): a user
    message of one text that begins with the transcript's header; (header, result) or None."""
    content = item.get("content")
    if item.get("type") != "message" or item.get("role") != "user":
        return None
    if not isinstance(content, list) or len(content) != 1:
        return None
    text = content[0].get("text") if isinstance(content[0], dict) else None
    match = TRANSCRIBED.match(text) if isinstance(text, str) else None
    return (match.group(0), text[match.end() :]) if match and isinstance(text, str) else None


def _cleared(item: dict[str, Any]) -> dict[str, Any]:
    transcribed = _transcribed(item)
    if transcribed is None:
        return {**item, "output": CLEARED}
    return {**item, "content": [{**item["content"][0], "text": transcribed[0] + CLEARED}]}


def _output_text(item: dict[str, Any]) -> str:
    transcribed = _transcribed(item)
    if transcribed is not None:
        return transcribed[1]
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(str(p.get("text") or "") for p in output if isinstance(p, dict))
    return ""
