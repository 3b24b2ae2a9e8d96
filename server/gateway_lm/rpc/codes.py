"""The JSON-RPC error codes the sidecar answers with, and the `data` every error carries
(rfcs/0003-rpc-contract.md): the spec's codes are lsprotocol's; `GATEWAY_ERROR`, in the range the
spec leaves to servers, is ours."""

from __future__ import annotations

from lsprotocol.types import ErrorCodes

from ..gateway.errors import ErrorData, ErrorKind

PARSE_ERROR = int(ErrorCodes.ParseError)
INVALID_REQUEST = int(ErrorCodes.InvalidRequest)
INVALID_PARAMS = int(ErrorCodes.InvalidParams)
INTERNAL_ERROR = int(ErrorCodes.InternalError)
GATEWAY_ERROR = -32000  # a GatewayError: its kind in `data` says which


def error_data(kind: ErrorKind) -> ErrorData:
    """The `data` of an error that is not the gateway's answer: no status, no retry."""
    return {"kind": kind, "status": None, "retryAfter": None}
