"""The sidecar's stdin: LSP framing that survives bad input, in place of pygls' `run_async`.

pygls' reader trusts every byte: after one wrong `Content-Length` or a few stray bytes it is out of
step for good and answers nothing again; a line over the pipe reader's limit ends the process; a
message it cannot parse (no `params`, nested too deeply, not an object) is logged and never answered,
so the client waits forever. Here a bad message costs that message only:
- the reader re-synchronises on the next `Content-Length:` header, skipping what comes before it
  (a valid JSON body can never contain `Content-Length: N` followed by a raw CRLF, so finding one
  inside a body proves the declared length was wrong);
- header blocks and bodies are capped (`MAX_HEADER`, `MAX_BODY`); an oversized body is discarded
  as it streams, never held;
- every request gets an answer: its result, or a JSON-RPC error to its id (read from the start of
  the body when the whole cannot be parsed; `null` when there is none).
Limits: rfcs/0003-rpc-contract.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcException

from .errors import ErrorData, ErrorKind
from .pygls_hooks import WireProtocol

log = logging.getLogger("gateway_lm.stdio")

MAX_BODY = 64 << 20  # a 10 MB tool result is normal; 64 MiB is far beyond any real chat request
MAX_HEADER = 8192
READ_SIZE = 1 << 20
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603

_NAME = b"Content-Length:"
_NAME_ANY_CASE = re.compile(rb"content-length:", re.IGNORECASE)
_LENGTH_LINE = re.compile(rb"content-length:[ \t]{0,8}(\d{1,15})[ \t]{0,8}\r\n", re.IGNORECASE)
_OTHER_HEADER = re.compile(rb"[!-9;-~]+:[^\r\n]*")
_LINE_SPAN = 64  # longer than any header line `_LENGTH_LINE` matches: the overlap between scans
_ID_SPAN = 1024  # how much of a body that cannot be parsed is searched for its id
# The id of a message whose body cannot be parsed, when it comes first or after jsonrpc/method
# (as every client writes it); anything else is not guessed at.
_PREFIX_ID = re.compile(
    rb'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,200}"\s*,)*\s*"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")'
)


@dataclass
class Fault:
    """A message that cannot be handled; answered with `code` when it had an id (or when JSON-RPC
    asks for a `null`-id answer)."""

    code: int
    message: str
    msg_id: int | str | None = None
    answer: bool = True
    kind: ErrorKind = "bad_request"


class Framer:
    """Bytes in, message bodies (or faults) out; holds at most one body and a bounded header."""

    def __init__(self, max_body: int = MAX_BODY) -> None:
        self._buf = bytearray()
        self._max_body = max_body
        self._length: int | None = None  # of the body being read
        self._scanned = 0  # how much of that body was searched for a header
        self._discard = 0  # bytes of an oversized body still to drop
        self._refused: int | None = None  # its length, until its start (and id) has been read
        self._skipped = 0  # bytes skipped since the last message, reported once

    def feed(self, chunk: bytes) -> list[bytearray | Fault]:
        self._buf += chunk
        out: list[bytearray | Fault] = []
        while self._step(out):
            pass
        return out

    def _step(self, out: list[bytearray | Fault]) -> bool:
        if self._discard:
            return self._drop_oversized(out)
        if self._length is not None:
            return self._body(out)
        return self._header(out)

    # ---- headers ----

    def _header(self, out: list[bytearray | Fault]) -> bool:
        buf = self._buf
        found = _NAME_ANY_CASE.search(buf)
        if found is None:
            self._skip(max(0, len(buf) - len(_NAME) + 1))  # the tail may be the start of a header
            return False
        if found.start():
            self._skip(found.start(), quiet=_header_lines(buf[: found.start()]))
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > MAX_HEADER:
                self._skip(len(_NAME))
                return True
            return False
        line = _LENGTH_LINE.match(buf)
        if line is None or not _header_lines(buf[line.end() : end + 2]):
            self._skip(len(_NAME))
            return True
        length = int(line.group(1))
        del buf[: end + 4]
        self._report_skipped()
        if length == 0:
            log.warning("ignored a message with an empty body")
        elif length > self._max_body:
            self._discard = self._refused = length
        else:
            self._length, self._scanned = length, 0
        return True

    def _skip(self, count: int, quiet: bool = False) -> None:
        if count:
            del self._buf[:count]
            if not quiet:
                self._skipped += count

    def _report_skipped(self) -> None:
        if self._skipped:
            log.warning("skipped %d bytes on stdin that were not a message", self._skipped)
            self._skipped = 0

    # ---- bodies ----

    def _body(self, out: list[bytearray | Fault]) -> bool:
        assert self._length is not None
        length, buf = self._length, self._buf
        available = min(len(buf), length)
        restart = _embedded_header(buf, max(0, self._scanned - _LINE_SPAN), available)
        if restart is None and len(buf) >= length:
            restart = _name_start_at_end(buf, length)
        if restart is not None:
            self._length = None
            out.append(Fault(PARSE_ERROR, _SHORT.format(length=length), _prefix_id(buf[:restart])))
            del buf[:restart]
            return True
        self._scanned = available
        if len(buf) < length:
            return False
        if len(buf) == length:  # the usual case for a big message: no copy
            body, self._buf = buf, bytearray()
        else:
            body = buf[:length]
            del buf[:length]
        self._length = None
        out.append(body)
        return True

    def _refuse(self, length: int, start: bytes | bytearray) -> Fault:
        self._refused = None
        message = (
            f"The message is {length:,} bytes; the limit is {self._max_body >> 20} MiB."
            " Send less (a smaller tool result or attachment)."
        )
        log.error("dropped a %d-byte message over the %d MiB limit", length, self._max_body >> 20)
        return Fault(INVALID_REQUEST, message, _prefix_id(start))

    def _drop_oversized(self, out: list[bytearray | Fault]) -> bool:
        """Drops the body as it arrives, after its start named the id to answer; a header inside it
        means the length was not real."""
        buf = self._buf
        restart = _embedded_header(buf, 0, min(len(buf), self._discard))
        if restart is not None:
            if self._refused is not None:
                out.append(self._refuse(self._refused, buf[:restart]))
            self._discard = 0
            del buf[:restart]
            return True
        if self._refused is not None:
            if len(buf) < min(_ID_SPAN, self._discard):
                return False
            out.append(self._refuse(self._refused, buf[:_ID_SPAN]))
        count = min(self._discard, len(buf))
        if count < self._discard:
            count = max(0, count - _LINE_SPAN)  # keep what may be the start of a header
        del buf[:count]
        self._discard -= count
        return self._discard == 0


_SHORT = "The message ended before its Content-Length ({length} bytes): a new message began inside it. It was dropped"


def _header_lines(block: bytes | bytearray) -> bool:
    """Whether `block` is nothing but `Name: value` lines other than Content-Length (CRLF-ended)."""
    lines = bytes(block).split(b"\r\n")
    if lines[-1]:
        return False
    return all(_OTHER_HEADER.fullmatch(line) and not _NAME_ANY_CASE.match(line) for line in lines[:-1])


def _embedded_header(buf: bytearray, start: int, end: int) -> int | None:
    """Where a whole `Content-Length: N` line begins at or after `start` and before `end`."""
    stop = min(len(buf), end + len(_NAME) - 1)  # a line may begin inside the range and end past it
    at = buf.find(_NAME, start, stop)
    while at >= 0:
        if _LENGTH_LINE.match(buf, at):
            return at
        at = buf.find(_NAME, at + 1, stop)
    return None


def _name_start_at_end(buf: bytearray, end: int) -> int | None:
    """Where buf[:end] ends with the start of `Content-Length:`, which no valid JSON text does: the
    declared length ended inside the next message's header."""
    for size in range(min(len(_NAME) - 1, end), 0, -1):
        if buf.endswith(_NAME[:size], 0, end):
            return end - size
    return None


def _prefix_id(body: bytes | bytearray) -> int | str | None:
    found = _PREFIX_ID.match(body[:_ID_SPAN])
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None


# ---- messages ----


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(body: bytes | bytearray) -> dict[str, Any] | Fault:
    """The message as a dict with `params` present, or the fault to answer."""
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except RecursionError:
        return Fault(INVALID_REQUEST, "The message is nested too deeply to read", _prefix_id(body))
    except ValueError as error:
        detail = error.msg if isinstance(error, json.JSONDecodeError) else str(error)[:200]
        return Fault(PARSE_ERROR, f"The message is not valid JSON ({detail})", _prefix_id(body))
    if not isinstance(data, dict):
        return Fault(INVALID_REQUEST, "A message must be a JSON object")
    has_id = "id" in data
    msg_id = data.get("id")
    if has_id and (isinstance(msg_id, bool) or not isinstance(msg_id, int | str)):
        return Fault(INVALID_REQUEST, "A message id must be a string or an integer")
    problem = _shape_problem(data)
    if problem:
        return Fault(INVALID_REQUEST, problem, msg_id, answer=has_id)
    if "method" in data:
        data.setdefault("params", None)  # optional in JSON-RPC; pygls' message types require it
    return data


def _shape_problem(data: dict[str, Any]) -> str | None:
    if data.get("jsonrpc") != "2.0":
        return 'A message must have "jsonrpc": "2.0"'
    if "method" in data:
        return None if isinstance(data["method"], str) else "A method name must be a string"
    if "id" not in data or ("result" not in data and "error" not in data):
        return "A message must have a method, or be a response with an id and a result or error"
    return None


def answer_fault(protocol: WireProtocol, fault: Fault) -> None:
    if not fault.answer:
        log.warning("ignored a notification: %s", fault.message)
        return
    log.warning("answered a bad message with %d: %s", fault.code, fault.message)
    data: ErrorData = {"kind": fault.kind, "status": None, "retryAfter": None}
    error = {"code": fault.code, "message": fault.message, "data": data}
    protocol.send_message({"jsonrpc": "2.0", "id": fault.msg_id, "error": error})


# Methods answered in place, before pygls: the handler returns the result, or None to leave the
# request to pygls' dispatch (which runs it as a task). For the one request Copilot sends by the
# thousand, a token count, pygls' task and cattrs round trip cost more than the count (rfcs/0005).
Answer = Callable[[object], Mapping[str, object] | None]  # raw params in
Direct = Mapping[str, Answer]


def handle(protocol: WireProtocol, body: bytes | bytearray, direct: Direct | None = None) -> None:
    data = parse(body)
    if isinstance(data, Fault):
        answer_fault(protocol, data)
        return
    is_request = "method" in data and "id" in data
    if is_request and direct and data["method"] in direct and _answered(protocol, data, direct[data["method"]]):
        return
    try:
        message = protocol.structure_message(data)
        protocol.handle_message(message)
    except JsonRpcException as error:
        if is_request:
            answer_fault(protocol, Fault(error.code, error.message, data["id"]))
    except Exception as error:  # a bug in pygls or ours: answered, and the reader goes on
        log.exception("could not handle a message")
        if is_request:
            message = f"Internal error in the sidecar ({type(error).__name__}); see the logs"
            answer_fault(protocol, Fault(INTERNAL_ERROR, message, data["id"], kind="internal"))


def _answered(protocol: WireProtocol, data: dict[str, Any], method: Answer) -> bool:
    try:
        result = method(data["params"])
    except JsonRpcException as error:
        answer_fault(protocol, Fault(error.code, error.message, data["id"]))
        return True
    except Exception as error:  # a bug of ours: answered like any other
        log.exception("could not answer %s", data["method"])
        message = f"Internal error in the sidecar ({type(error).__name__}); see the logs"
        answer_fault(protocol, Fault(INTERNAL_ERROR, message, data["id"], kind="internal"))
        return True
    if result is None:
        return False
    protocol.send_message({"jsonrpc": "2.0", "id": data["id"], "result": result})
    return True


async def serve_stdin(
    reader: asyncio.StreamReader,
    protocol: WireProtocol,
    stop_event: threading.Event,
    direct: Direct | None = None,
) -> None:
    """Reads messages until end of input (or `exit`) and hands each to `direct` or to pygls."""
    framer = Framer()
    while not stop_event.is_set():
        chunk = await reader.read(READ_SIZE)
        if not chunk:
            break
        for item in framer.feed(chunk):
            if isinstance(item, Fault):
                answer_fault(protocol, item)
            else:
                handle(protocol, item, direct)
