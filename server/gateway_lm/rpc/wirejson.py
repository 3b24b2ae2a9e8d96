"""The last check before a message reaches the client: the wire carries valid JSON only.

pygls writes with `json.dumps`, which writes NaN and Infinity; vscode-jsonrpc's `JSON.parse` rejects
them, and the extension would drop the message (a chat's answer never arriving). Every number from
outside is bounded where it is parsed (retry-after, the catalogue, accounting.json, settings); this
catches the bug that lets one through, at the cost of that one message: a response becomes an
internal error, a notification is dropped and logged. It sits in pygls' writer (protocol.py
`set_writer`, pygls' public interface), so it sees every message pygls frames, and looks closer only
at a frame holding one of those words (a strict parse of that frame alone).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .codes import INTERNAL_ERROR
from .framing import Fault

if TYPE_CHECKING:
    from pygls.io_ import AsyncWriter, Writer

log = logging.getLogger(__name__)
Refuse = Callable[[Fault, bool], None]  # protocol.WireProtocol.refuse: answers an id with an error


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class StrictWriter:
    """pygls' writer interface around another writer: frames holding NaN or Infinity never pass."""

    def __init__(self, writer: AsyncWriter | Writer, refuse: Refuse) -> None:
        self.writer = writer
        self._refuse = refuse

    def write(self, data: bytes) -> Any:  # what the writer returns: pygls awaits an awaitable
        if (b"NaN" in data or b"Infinity" in data) and not self._strict(data):
            return None
        return self.writer.write(data)

    def close(self) -> Any:
        return self.writer.close()

    def _strict(self, frame: bytes) -> bool:
        """True when the frame is strict JSON; otherwise what replaces it has been sent."""
        body = frame[frame.find(b"\r\n\r\n") + 4 :]
        try:
            json.loads(body, parse_constant=_no_constant)
            return True
        except ValueError:
            pass
        plain = json.loads(body)  # NaN allowed: only to read id and method
        method = plain.get("method") if isinstance(plain, dict) else None
        if not isinstance(plain, dict) or method is not None or "id" not in plain:
            log.error("dropped a %s message holding NaN or Infinity (a bug in the sidecar)", method or "malformed")
            return False
        log.error("the answer to request %s held NaN or Infinity (a bug in the sidecar); sent an error", plain["id"])
        message = "Internal error in the sidecar: its answer held a number JSON cannot carry; see the logs"
        self._refuse(Fault(INTERNAL_ERROR, message, plain["id"], kind="internal"), True)
        return False
