"""The last check before a message reaches the client: the wire carries valid JSON only.

`json.dumps` writes NaN and Infinity by default; vscode-jsonrpc's `JSON.parse` rejects them, and the
language client then shuts the sidecar down for good. Every number from outside is bounded where it
is parsed (retry-after, the catalogue, accounting.json, settings); this catches the bug that lets one
through, at the cost of that one message: a response becomes an internal error, a notification is
dropped and logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from .codes import INTERNAL_ERROR, error_data

log = logging.getLogger(__name__)
Default = Callable[[object], object]  # json.dumps' `default`: pygls' serialiser of its attrs messages


def dumps(message: object, default: Default | None = None) -> str:
    """JSON text of one message; ValueError when it holds a number JSON cannot carry."""
    return json.dumps(message, default=default, allow_nan=False)


def encode(message: object, default: Default | None = None) -> str | None:
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


def refusal(message: object, default: Default | None = None) -> str | None:
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
        "data": error_data("internal"),
    }
    return dumps({"jsonrpc": "2.0", "id": plain["id"], "error": error})
