"""What the sidecar's stdin (stdio.py) needs to know of LSP framing to keep pygls' reader in step.

pygls frames and parses every message itself (`pygls.io_.run_async`); the stdin it reads bounds what
a bad frame can cost, with these:
- a new message is found by its `Content-Length: N` line: a valid JSON body can never contain one
  followed by a raw CRLF, so finding one inside a body proves the declared length was wrong;
- header lines and bodies are capped (`MAX_HEADER`, `MAX_BODY`);
- the id of a body that cannot be parsed is read from its start, so that it can still be answered.
Limits: rfcs/0003-rpc-contract.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..gateway.errors import ErrorKind

MAX_BODY = 64 << 20  # a 10 MB tool result is normal; 64 MiB is far beyond any real chat request
MAX_HEADER = 8192

NAME = b"Content-Length: "  # as pygls matches it, and as vscode-jsonrpc writes it
_LENGTH_LINE = re.compile(rb"Content-Length: (\d{1,15})\r\n")
LINE_SPAN = 64  # longer than any header line `_LENGTH_LINE` matches: the overlap between scans
ID_SPAN = 1024  # how much of a body that cannot be parsed is searched for its id
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


def embedded_header(buf: bytearray, start: int, end: int) -> int | None:
    """Where a whole `Content-Length: N` line begins at or after `start` and before `end`."""
    stop = min(len(buf), end + len(NAME) - 1)  # a line may begin inside the range and end past it
    at = buf.find(NAME, start, stop)
    while at >= 0:
        if _LENGTH_LINE.match(buf, at):
            return at
        at = buf.find(NAME, at + 1, stop)
    return None


def name_start_at_end(buf: bytearray, end: int) -> int | None:
    """Where buf[:end] ends with the start of `Content-Length: `, which no valid JSON text does: the
    declared length ended inside the next message's header."""
    for size in range(min(len(NAME) - 1, end), 0, -1):
        if buf.endswith(NAME[:size], 0, end):
            return end - size
    return None


def prefix_id(body: bytes | bytearray) -> int | str | None:
    """The id at the start of a body that cannot be parsed as a whole, when it is where clients put it."""
    found = _PREFIX_ID.match(body[:ID_SPAN])
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None
