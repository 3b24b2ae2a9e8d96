"""The pygls protocol the sidecar runs: every message in and out goes through pygls, and what pygls
would trust is checked here, through its public surface only (rfcs/0001-architecture.md, "The route
of a message").

- `structure_message`, which pygls' reader passes to `json.loads` as its object hook (called for
  every JSON object of a body, innermost first), leaves them all plain: a tool's schema with a
  `jsonrpc` key would otherwise be turned into a message inside the params, and fail the request.
- `handle_message` checks the whole message (`checked`), then structures it as pygls does and hands
  it to pygls' dispatch. A message that cannot be handled is answered (`refuse`): as a request to
  `REFUSED`, whose handler raises the fault, so pygls answers it as any failed request, by the id the
  message had (`null` when none could be read).
- `set_writer` puts the strict check (wirejson.py) in front of whatever writer pygls is given.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic import JsonValue
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol, JsonRPCRequestMessage, LanguageServerProtocol

from .codes import INTERNAL_ERROR, INVALID_REQUEST, error_data
from .framing import Fault
from .wirejson import StrictWriter

if TYPE_CHECKING:  # pygls declares its reader and writer interfaces for type checking only
    from pygls.io_ import AsyncWriter, Writer

log = logging.getLogger(__name__)
REFUSED = "$/gateway/refused"  # the method a message that cannot be handled is answered through


class WireProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        return data  # every object stays plain; handle_message structures the message itself

    def handle_message(self, message: object) -> None:
        data = checked(message)
        if isinstance(data, Fault):
            self.refuse(data)
            return
        is_request = "method" in data and "id" in data
        try:
            JsonRPCProtocol.handle_message(self, JsonRPCProtocol.structure_message(self, data))
        except JsonRpcException as error:
            if is_request:
                self.refuse(Fault(error.code, error.message, data["id"]))
        except Exception as error:  # a bug in pygls or ours: answered, and the reader goes on
            log.exception("could not handle a message")
            if is_request:
                message = f"Internal error in the sidecar ({type(error).__name__}); see the logs"
                self.refuse(Fault(INTERNAL_ERROR, message, data["id"], kind="internal"), quiet=True)

    def refuse(self, fault: Fault, quiet: bool = False) -> None:
        """Answers a message that cannot be handled (a notification's fault is logged only)."""
        if not fault.answer:
            log.warning("ignored a notification: %s", fault.message)
            return
        if not quiet:
            log.warning("answered a bad message with %d: %s", fault.code, fault.message)
        request = JsonRPCRequestMessage(id=fault.msg_id, method=REFUSED, params=fault, jsonrpc="2.0")  # type: ignore[arg-type]
        JsonRPCProtocol.handle_message(self, request)

    def set_writer(self, writer: AsyncWriter | Writer, include_headers: bool = True) -> None:
        super().set_writer(StrictWriter(writer, self.refuse), include_headers)


def refused(params: JsonValue | Fault) -> NoReturn:
    """The handler of `REFUSED`: the fault `refuse` passed, raised for pygls to answer. A client
    that calls it is told the method does not exist. (Params typed so that pygls, which reads the
    first parameter's annotation, passes no server.)"""
    if not isinstance(params, Fault):
        raise JsonRpcException(message=f"Unhandled method {REFUSED}", code=-32601)
    raise JsonRpcException(message=params.message, code=params.code, data=error_data(params.kind))


def checked(data: object) -> dict[str, Any] | Fault:
    """The message as a dict with `params` present, or the fault to answer."""
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
