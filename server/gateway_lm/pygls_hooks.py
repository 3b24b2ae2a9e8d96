"""The pygls internals the sidecar relies on, all here (pygls==2.1.1, pinned in pyproject.toml).

rfcs/0005-performance.md, "Private hooks", lists each with why and the test that guards it
(tests/test_hooks.py): check that list before moving pygls to another version.
- `JsonRPCProtocol._send_data`: pygls writes every message through it. `WireProtocol` replaces it
  with the strict encoder (wirejson.py), and offers it as `send_message` to the sidecar's own writes
  of plain dicts; its body reads `_serialize_message` and `_include_headers`, as pygls' does.
- `JsonRPCServer._stop_event`: what `shutdown()` sets to stop pygls' loop; ours watches it instead.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading

from pygls.protocol import LanguageServerProtocol
from pygls.server import JsonRPCServer

from .rpc.wirejson import encode

log = logging.getLogger(__name__)
_writes: set[asyncio.Future[None]] = set()


class WireProtocol(LanguageServerProtocol):
    """pygls' protocol with the strict encoder; framing and writing as pygls does them."""

    def send_message(self, data: object) -> None:
        """One message, a plain dict or one of pygls' attrs messages, to the client. A plain dict
        skips pygls' attrs wrapping and cattrs walk (`notify()`, its responses), which cost more
        than a count or a stream's parts."""
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

    _send_data = send_message  # pygls' own writes (responses, notify()) come through here too


def stop_event(server: JsonRPCServer) -> threading.Event:
    """The event that `server.shutdown()` sets, for a loop other than pygls' own to watch."""
    server._stop_event = event = threading.Event()
    return event
