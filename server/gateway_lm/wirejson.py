"""The last check before a message reaches the client: the wire carries valid JSON only.

`json.dumps` writes NaN and Infinity by default; vscode-jsonrpc's `JSON.parse` rejects them, and the
language client then shuts the sidecar down for good. Every number from outside is bounded where it
is parsed (retry-after, the catalogue, accounting.json, settings); this catches the bug that lets one
through, at the cost of that one message: a response becomes an internal error, a notification is
dropped and logged.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable
from typing import Any

from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("gateway_lm.wire")
INTERNAL_ERROR = -32603
_writes: set[asyncio.Future[Any]] = set()


def dumps(message: Any, default: Callable[[Any], Any] | None = None) -> str:
    """JSON text of one message; ValueError when it holds a number JSON cannot carry."""
    return json.dumps(message, default=default, allow_nan=False)


def encode(message: Any, default: Callable[[Any], Any] | None = None) -> str | None:
    """The text to send for `message`: itself, the error response that replaces it, or None."""
    try:
        return dumps(message, default)
    except ValueError:
        pass  # NaN or Infinity (or a cycle, which `refusal` meets again)
    except (TypeError, RecursionError) as error:
        log.error("could not encode a message (a bug in the sidecar): %s: %s", type(error).__name__, error)
        return None
    try:
        return refusal(message, default)
    except (ValueError, TypeError, RecursionError) as error:
        log.error("could not encode a message (a bug in the sidecar): %s: %s", type(error).__name__, error)
        return None


def refusal(message: Any, default: Callable[[Any], Any] | None = None) -> str | None:
    """What to send instead of a message holding NaN or Infinity: an error response to the same
    request, or nothing for a notification."""
    plain = json.loads(json.dumps(message, default=default))  # NaN allowed: only to read id and method
    method = plain.get("method") if isinstance(plain, dict) else None
    if not isinstance(plain, dict) or method is not None or "id" not in plain:
        log.error("dropped a %s message holding NaN or Infinity (a bug in the sidecar)", method or "malformed")
        return None
    log.error("the answer to request %s held NaN or Infinity (a bug in the sidecar); sent an error", plain["id"])
    error = {
        "code": INTERNAL_ERROR,
        "message": "Internal error in the sidecar: its answer held a number JSON cannot carry; see the logs",
        "data": {"kind": "internal", "status": None, "retryAfter": None},
    }
    return dumps({"jsonrpc": "2.0", "id": plain["id"], "error": error})


class WireProtocol(LanguageServerProtocol):
    """pygls' protocol with the strict encoder; framing and writing as pygls does them."""

    def _send_data(self, data: Any) -> None:
        if not data or self.writer is None:
            super()._send_data(data)  # nothing to send, or pygls logs the missing transport
            return
        body = encode(data, self._serialize_message)
        if body is None:
            return
        header = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        try:
            written = self.writer.write(((header if self._include_headers else "") + body).encode(self.CHARSET))
        except BrokenPipeError:
            raise  # the client is gone: the server's loop ends
        except Exception as error:
            log.error("could not write a message: %s: %s", type(error).__name__, error)
            return
        if inspect.isawaitable(written):
            task = asyncio.ensure_future(written)
            _writes.add(task)  # held until done: the loop keeps only a weak reference
            task.add_done_callback(_writes.discard)
