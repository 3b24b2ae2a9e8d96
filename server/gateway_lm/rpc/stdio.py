"""The sidecar's stdin as pygls reads it: pygls' own loop (`pygls.io_.run_async`, given this stream
through its public reader interface, `readline` and `readexactly`) frames and parses every message;
this stream bounds what bad input can cost.

pygls' loop trusts every byte: one wrong `Content-Length` puts it out of step for good (a body then
runs into the next header line, every message after it too), a line or a body is held whole however
long, and a body it cannot parse is logged and never answered, so the client waits forever. Here:
- a header always begins a line: a line is cut before a `Content-Length: ` inside it, and a run
  without a newline is handed over in pieces pygls skips, so at most `MAX_HEADER` bytes are held;
- a body stops short at a `Content-Length: N` line inside it (the declared length ran into the next
  message), and one over `MAX_BODY` is dropped as it streams, never held;
- a body refused so, or one that holds NaN or Infinity (which Python's `json` would read), reaches
  pygls as bytes that are not JSON: its parse fails, and `fault_for` says what to answer (the
  id read from the start of the body; `null` when there is none).
Limits: rfcs/0003-rpc-contract.md; why a stream and not our own loop: rfcs/0001-architecture.md.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from .codes import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR
from .framing import (
    ID_SPAN,
    LINE_SPAN,
    MAX_BODY,
    MAX_HEADER,
    NAME,
    Fault,
    embedded_header,
    name_start_at_end,
    prefix_id,
)
from .pipes import READ_SIZE, Source

log = logging.getLogger(__name__)
NOT_JSON = b"\x00"  # handed to pygls in place of a refused body: its parse fails, and the fault is answered
_SHORT = "The message ended before its Content-Length ({length} bytes): a new message began inside it. It was dropped"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class Stdin:
    """pygls' `AsyncReader` over stdin's bytes (pipes.py), holding at most one body and a bounded line."""

    def __init__(self, source: Source, max_body: int = MAX_BODY) -> None:
        self._source = source
        self._buf = bytearray()
        self._eof = False
        self._max_body = max_body
        self._body: bytes = b""  # the last body handed to pygls, for the id of one it cannot parse
        self._fault: Fault | None = None  # what to answer for it instead, when it was refused here

    async def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = await self._source.read(READ_SIZE)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    async def readline(self) -> bytes:
        while True:
            buf = self._buf
            end = _line_end(buf)
            if end is not None:
                line = bytes(buf[:end])
                del buf[:end]
                return line
            if len(buf) > MAX_HEADER:  # no line end: handed over in pieces, keeping what may start a header
                keep = len(NAME) - 1
                piece = bytes(buf[:-keep])
                del buf[:-keep]
                return piece
            if not await self._fill():
                rest = bytes(buf)
                buf.clear()
                return rest  # b"" at the end: pygls' loop ends

    async def readexactly(self, n: int) -> bytes:
        self._fault = None
        if n > self._max_body:
            return await self._refuse(n)
        scanned = 0
        while True:
            buf = self._buf
            available = min(len(buf), n)
            restart = embedded_header(buf, max(0, scanned - LINE_SPAN), available)
            if restart is None and len(buf) >= n:
                restart = name_start_at_end(buf, n)
            if restart is not None:  # the declared length ran into the next message
                self._fault = Fault(PARSE_ERROR, _SHORT.format(length=n), prefix_id(buf[:restart]))
                del buf[:restart]
                return NOT_JSON
            scanned = available
            if len(buf) >= n:
                body = bytes(buf[:n])
                del buf[:n]
                return self._checked(body)
            if not await self._fill():
                buf.clear()
                return b""  # the input ended inside a body: pygls' loop ends

    def _checked(self, body: bytes) -> bytes:
        """The body, or NOT_JSON when it holds NaN or Infinity: pygls' `json.loads` would read them,
        and no client writes them (the strict parse runs only when one of those words is there)."""
        self._body = body
        if b"NaN" in body or b"Infinity" in body:
            try:
                json.loads(body, parse_constant=_no_constant)
            except (ValueError, RecursionError) as error:
                if isinstance(error, ValueError) and "is not JSON" in str(error):
                    self._fault = Fault(PARSE_ERROR, f"The message is not valid JSON ({error})", prefix_id(body))
                    return NOT_JSON
        return body

    async def _refuse(self, length: int) -> bytes:
        """Drops a body over the cap as it arrives, after its start named the id to answer; a header
        inside it means the length was not real."""
        buf, left = self._buf, length
        start = b""
        while True:
            restart = embedded_header(buf, 0, min(len(buf), left))
            if not start:
                if restart is None and len(buf) < min(ID_SPAN, left) and await self._fill():
                    continue
                start = bytes(buf[: restart if restart is not None else ID_SPAN]) or b" "
            if restart is not None:
                del buf[:restart]
                break
            count = min(left, len(buf))
            if count < left:
                count = max(0, count - LINE_SPAN)  # keep what may be the start of a header
            del buf[:count]
            left -= count
            if not left or not await self._fill():
                break
        log.error("dropped a %d-byte message over the %d MiB limit", length, self._max_body >> 20)
        message = (
            f"The message is {length:,} bytes; the limit is {self._max_body >> 20} MiB."
            " Send less (a smaller tool result or attachment)."
        )
        self._fault = Fault(INVALID_REQUEST, message, prefix_id(start))
        return NOT_JSON

    def fault_for(self, error: Exception) -> Fault:
        """What to answer for the body pygls could not handle (its error handler calls this)."""
        if self._fault is not None:
            fault, self._fault = self._fault, None
            return fault
        if isinstance(error, RecursionError):
            return Fault(INVALID_REQUEST, "The message is nested too deeply to read", prefix_id(self._body))
        if isinstance(error, ValueError):
            detail = error.msg if isinstance(error, json.JSONDecodeError) else str(error)[:200]
            return Fault(PARSE_ERROR, f"The message is not valid JSON ({detail})", prefix_id(self._body))
        message = f"Internal error in the sidecar ({type(error).__name__}); see the logs"
        return Fault(INTERNAL_ERROR, message, prefix_id(self._body), kind="internal")


def _line_end(buf: bytearray) -> int | None:
    """Where the next line pygls reads ends: after its newline, or before a header that begins
    inside it (what came before is then a line of its own, which pygls skips)."""
    newline = buf.find(b"\n")
    header = buf.find(NAME, 1, newline if newline >= 0 else len(buf))
    if header > 0:
        return header
    return newline + 1 if newline >= 0 else None
