"""LSP framing that survives bad input: bytes in, message bodies (or faults) out (stdio.py reads with it).

- The reader re-synchronises on the next `Content-Length:` header, skipping what comes before it (a
  valid JSON body can never contain `Content-Length: N` followed by a raw CRLF, so finding one inside
  a body proves the declared length was wrong).
- Header blocks and bodies are capped (`MAX_HEADER`, `MAX_BODY`); an oversized body is discarded as
  it streams, never held.
- The id of a body that cannot be parsed is read from its start, so that it can still be answered.
Limits: rfcs/0003-rpc-contract.md.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

from ..errors import ErrorKind
from .codes import INVALID_REQUEST, PARSE_ERROR

log = logging.getLogger(__name__)

MAX_BODY = 64 << 20  # a 10 MB tool result is normal; 64 MiB is far beyond any real chat request
MAX_HEADER = 8192

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
            out.append(Fault(PARSE_ERROR, _SHORT.format(length=length), prefix_id(buf[:restart])))
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
        return Fault(INVALID_REQUEST, message, prefix_id(start))

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


def prefix_id(body: bytes | bytearray) -> int | str | None:
    """The id at the start of a body that cannot be parsed as a whole, when it is where clients put it."""
    found = _PREFIX_ID.match(body[:_ID_SPAN])
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None
