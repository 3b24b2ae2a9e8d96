"""The sidecar's stdin: LSP framing that survives bad input, in place of pygls' `run_async`.

pygls' reader trusts every byte: after one wrong `Content-Length` or a few stray bytes it is out of
step for good and answers nothing again; a line over the pipe reader's limit ends the process; a
message it cannot parse (no `params`, nested too deeply, not an object) is logged and never answered,
so the client waits forever. Here a bad message costs that message only:
- the framing (framing.py) re-synchronises on the next `Content-Length:` header and caps header
  blocks and bodies;
- every request gets an answer: its result, or a JSON-RPC error to its id (read from the start of
  the body when the whole cannot be parsed; `null` when there is none).
Limits: rfcs/0003-rpc-contract.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pygls.exceptions import JsonRpcException

from ..pygls_hooks import WireProtocol
from .codes import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, error_data
from .framing import Fault, Framer, prefix_id

log = logging.getLogger(__name__)
READ_SIZE = 1 << 20

# ---- messages ----


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(body: bytes | bytearray) -> dict[str, Any] | Fault:
    """The message as a dict with `params` present, or the fault to answer."""
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except RecursionError:
        return Fault(INVALID_REQUEST, "The message is nested too deeply to read", prefix_id(body))
    except ValueError as error:
        detail = error.msg if isinstance(error, json.JSONDecodeError) else str(error)[:200]
        return Fault(PARSE_ERROR, f"The message is not valid JSON ({detail})", prefix_id(body))
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
    error = {"code": fault.code, "message": fault.message, "data": error_data(fault.kind)}
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
