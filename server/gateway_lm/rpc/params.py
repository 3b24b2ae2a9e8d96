"""What crosses the RPC seam: custom params kept as plain dicts, validated by pydantic, and every
failure leaving as a JSON-RPC error with `{kind, status, retryAfter}` (rfcs/0003-rpc-contract.md)."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import cattrs
from lsprotocol.types import ResponseErrorMessage
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator, model_validator
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter

from ..gateway.errors import GatewayError, invalid_key
from ..messages import MAX_MODEL_ID, ChatRequest, GroupId, MessageIn
from ..settings import MAX_COST_SETTING, describe_problems
from ..spend.history import DEFAULT_LIMIT, MAX_LIMIT
from .codes import GATEWAY_ERROR, INTERNAL_ERROR, INVALID_PARAMS, error_data

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")
Handler = Callable[[object], Awaitable[R]]  # the request's params, plain JSON, in; its result out


def plain_params_converter() -> cattrs.Converter:
    """pygls turns custom params (and results) into namedtuples, renaming `$schema`, `class`, `_private`:
    keep plain dicts."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    converter.register_structure_hook(JsonRPCRequestMessage, lambda obj, cls: cls(**obj))
    converter.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    # An error to a message whose id could not be read keeps `"id": null`, as JSON-RPC asks
    # (lsprotocol's hook leaves a None id out).
    converter.register_unstructure_hook(
        ResponseErrorMessage,
        lambda message: {"id": message.id, "jsonrpc": message.jsonrpc, "error": converter.unstructure(message.error)},
    )
    return converter


class ChatParams(ChatRequest):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    requestId: str | int
    apiKey: str | None = None
    # The provider group the model was listed for; its requests carry its own key and never fall
    # back to the environment's, and its spend is counted apart (rfcs/0010).
    group: GroupId | None = None
    # What the user approved after the spend guard asked (rfcs/0006-spend.md): a request estimated at
    # most `approvedCost` USD passes the request limit; `approvedDay` lets this request pass the day
    # limit; `approvedUnpriced` lets a request on a model without a price pass both.
    approvedCost: Annotated[float, Field(ge=0, le=MAX_COST_SETTING)] | None = None
    approvedDay: bool = False
    approvedUnpriced: bool = False

    # A GatewayError, not a ValueError: pydantic passes it on as it is, and rpc_errors sends it as
    # what it is (an `auth` error in the user's words), never "Internal error (ValueError…)".
    @model_validator(mode="after")
    def _key_can_go_out(self) -> ChatParams:
        refused = invalid_key(self.apiKey, self.group is not None) if self.apiKey else None
        if refused:
            raise refused
        return self


class CountParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: Annotated[str, Field(max_length=MAX_MODEL_ID)]
    texts: list[str | MessageIn]
    # A prefetch (the tool strings, before Copilot asks): counted once the tokenizer has loaded on its
    # own, never loading it for this (counting.py; rfcs/0004-token-accounting.md).
    background: bool = False


class KeyParams(BaseModel):
    """`gateway/models` and `gateway/credits`: the key to ask with (None: the sidecar's own)."""

    model_config = ConfigDict(extra="ignore")
    apiKey: str | None = None

    @field_validator("apiKey")
    @classmethod
    def _key_can_go_out(cls, key: str | None) -> str | None:
        refused = invalid_key(key, True) if key else None
        if refused:
            raise refused
        return key


class UsageParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    since: datetime.date | None = None  # UTC days, both ends included
    until: datetime.date | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT


class ConfigureParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    settings: dict[str, object] = {}
    baseUrl: str | None = None


def validated(model: type[M], params: object) -> M:
    try:
        return model.model_validate(params if params is not None else {})
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in error.errors()[:5]
        )
        raise bad_request(f"Invalid parameters: {problems}") from None


def bad_request(message: str) -> JsonRpcException:
    """Params the sidecar cannot take: the caller's mistake, never retried."""
    return JsonRpcException(message=message, code=INVALID_PARAMS, data=error_data("bad_request"))


def invalid_settings(problems: dict[str, str]) -> JsonRpcException:
    data = error_data("bad_request")
    data["settings"] = sorted(problems)
    return JsonRpcException(message=describe_problems(problems), code=INVALID_PARAMS, data=data)


def api_key(params: object) -> str | None:
    key = params.get("apiKey") if isinstance(params, dict) else None
    return key if isinstance(key, str) else None


def rpc_errors(redact: Callable[[str], str], handler: Handler[R]) -> Callable[[JsonValue], Awaitable[R]]:
    """Every failure leaves as a JSON-RPC error with `{kind, status, retryAfter}`; never a traceback."""

    # pygls reads the annotation of a handler's first parameter: a class the server is an instance
    # of (`object` is one) means "pass the server first". JsonValue, an alias, is no class.
    async def wrapped(params: JsonValue) -> R:
        try:
            return await handler(params)
        except GatewayError as error:
            log.warning("%s", error.for_log())
            raise JsonRpcException(message=redact(error.message), code=GATEWAY_ERROR, data=error.as_data()) from None
        except (JsonRpcException, asyncio.CancelledError):
            raise
        except Exception as error:
            log.exception("internal error")
            message = redact(f"Internal error in the sidecar ({type(error).__name__}: {error}); see the logs")
            raise JsonRpcException(message=message, code=INTERNAL_ERROR, data=error_data("internal")) from None

    return wrapped


def sync(handler: Callable[[object], R]) -> Handler[R]:
    async def run(params: object) -> R:
        return handler(params)

    return run
