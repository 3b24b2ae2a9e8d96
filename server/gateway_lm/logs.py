"""Sidecar logging: records go to the client as `window/logMessage`, with every secret redacted.

stdout is the JSON-RPC stream, so nothing here ever prints; before the client is connected, and
once it is gone (`to_stderr`), records go to stderr (which the extension also shows in its output
channel).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Callable

from .gateway.errors import CUT, KEY_VARIABLES

LEVELS = {
    "error": logging.ERROR,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": logging.DEBUG,
}
_MIN_SECRET = 8  # shorter strings are too likely to occur by chance to be worth redacting
_MIN_CUT = 4  # of a secret cut short, a shorter start tells nothing of it
_ERROR_LINE = re.compile(r"^[\s|+]*([A-Za-z_][\w.]*: .*)$", re.MULTILINE)  # "  | KeyError: 'id'"


class Redactor:
    def __init__(self) -> None:
        self._secrets: set[str] = set()
        for name in KEY_VARIABLES:
            self.add(os.environ.get(name))

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= _MIN_SECRET:
            self._secrets.add(secret)
            # and as a JSON string quotes it (a `"` or `\` escaped, non-ASCII as \uXXXX or not): a
            # gateway may echo the request's JSON, and a log line may hold some
            for quoted in (json.dumps(secret), json.dumps(secret, ensure_ascii=False)):
                self._secrets.add(quoted[1:-1])

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "[redacted]")
        return self._cut_short(text) if CUT in text else text

    def _cut_short(self, text: str) -> str:
        """The start of a secret that `errors.shown` cut off (right before its CUT mark) redacted too:
        the whole secret is not in the text to be found."""
        pieces = text.split(CUT)
        for index, piece in enumerate(pieces[:-1]):
            for secret in self._secrets:
                longest = next(
                    (
                        k
                        for k in range(min(len(secret) - 1, len(piece)), _MIN_CUT - 1, -1)
                        if piece.endswith(secret[:k])
                    ),
                    0,
                )
                if longest:
                    piece = piece[:-longest] + "[redacted]"
            pieces[index] = piece
        return CUT.join(pieces)


class ClientLogHandler(logging.Handler):
    """Formats, redacts and hands each record to `send(level, message)`."""

    def __init__(self, redact: Redactor, send: Callable[[int, str], None]) -> None:
        super().__init__()
        self._redact = redact
        self._send = send

    def to_stderr(self) -> None:
        """Records go to stderr from now on, redacted as before."""
        self._send = _write_stderr

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self._redact(self.format(record))
            self._send(record.levelno, message)
        except Exception:
            sys.stderr.write(self._redact(f"log record lost: {record.getMessage()}\n"))


def _write_stderr(level: int, message: str) -> None:
    sys.stderr.write(message + "\n")


class OneLine(logging.Formatter):
    """Log lines without tracebacks: users read these logs, and the error was already classified."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message = f"{message}: {type(error).__name__}: {error}"
        return f"[{record.name}] {message}" if not record.name.startswith("gateway_lm") else message


def _not_a_reported_rpc_error(record: logging.LogRecord) -> bool:
    # pygls logs every JSON-RPC error response we raise on purpose; the client already has it.
    error = record.exc_info[1] if record.exc_info else None
    return type(error).__name__ != "JsonRpcException"


def _brief(value: object) -> object:
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        if "\n" not in value:
            return value[:300]
        errors = _ERROR_LINE.findall(value)  # a formatted traceback → the error it ends in
        return errors[-1][:300] if errors else "<traceback>"
    return f"<{type(value).__name__}>"


def _pygls_without_payloads(record: logging.LogRecord) -> bool:
    # pygls puts whole messages (params, an API key among them) and formatted tracebacks into its
    # log arguments; keep its words, each argument cut to a type name or one line.
    if record.name.startswith("pygls") and isinstance(record.args, tuple):
        record.args = tuple(_brief(arg) for arg in record.args)
    return True


def to_stderr() -> None:
    """The client is gone (the sidecar is exiting): what is logged from here on, the last save's
    failure among it (accounting.py), goes to stderr, which the extension reads until the process
    has exited; sent to the closed pipe, it would be dropped without a word."""
    for handler in logging.getLogger("gateway_lm").handlers:  # configure() gives each logger the same one
        if isinstance(handler, ClientLogHandler):
            handler.to_stderr()


def configure(handler: logging.Handler, level_name: str) -> None:
    handler.setFormatter(OneLine())
    handler.filters[:] = [_not_a_reported_rpc_error, _pygls_without_payloads]
    for name, level in (
        ("gateway_lm", LEVELS.get(level_name.lower(), logging.INFO)),
        ("pygls", logging.WARNING),
        # Its loop's one record, "Unable to handle message", is for a body the sidecar answers with
        # its own log line (rpc/stdio.py, rpc/protocol.py `refuse`): one line per bad message.
        ("pygls.io_", logging.CRITICAL),
        ("httpx", logging.WARNING),
    ):
        # pygls logs every message it sends at INFO; at that level streaming slows several-fold.
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
