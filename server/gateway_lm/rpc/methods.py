"""The sidecar's JSON-RPC methods on a pygls server; `serve.py` runs it on stdio.

Contract: rfcs/0003-rpc-contract.md."""

from __future__ import annotations

import logging
import platform
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pydantic import JsonValue
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..chats import Approval, ChatService
from ..gateway.errors import group_without_key
from ..logs import ClientLogHandler, Redactor, configure
from ..messages import PartOut
from ..settings import describe_problems, secrets_of, updated_settings
from .codes import INTERNAL_ERROR, error_data
from .outbox import Outbox
from .params import (
    ChatParams,
    ConfigureParams,
    CountParams,
    KeyParams,
    UsageParams,
    api_key,
    bad_request,
    invalid_settings,
    plain_params_converter,
    rpc_errors,
    sync,
    validated,
)
from .pipes import Mode
from .protocol import REFUSED, WireProtocol, refused

if TYPE_CHECKING:  # types only: contract.py's schema printing is no part of serving
    from ..contract import Calibration, ChatResult, ConfigureResult, CountResult, MetricsNotification, ModelsResult
    from ..spend.ledger import BilledNotification, UsageResult
    from ..spend.lookups import Credits

log = logging.getLogger(__name__)
_LSP_LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}


class Sidecar:
    """The JSON-RPC face of the chat service (chats.py): each method validates its params, calls the
    service and shapes its answer; the service's news leaves as notifications."""

    def __init__(self, server: LanguageServer) -> None:
        if not isinstance(server.protocol, WireProtocol):
            raise TypeError("the sidecar runs WireProtocol (protocol.py)")
        self.server = server
        self.protocol = server.protocol
        self.redact = Redactor()
        self.chats = ChatService(
            self.notify_billed, self.notify_calibration, self._warn_user, metrics_changed=self.notify_metrics
        )
        self.tokens = self.chats.tokens
        self.outbox = Outbox(self.protocol.notify)  # told of the stdout writer when serving starts
        self._shown_problems = ""  # the invalid settings last shown to the user
        self._running: set[str | int] = set()  # requestIds of the chats running now

    # ---- setup ----

    def apply(self, settings: Mapping[str, object], base_url: str | None = None) -> dict[str, str]:
        """Applies each valid setting; an invalid one keeps its value and costs one warning, shown
        once. Returns the invalid ones (name → why)."""
        new, problems = updated_settings(
            self.chats.settings, {**settings, "baseUrl": base_url} if base_url else settings
        )
        for secret in secrets_of(new):  # a gateway or proxy may quote them back in an error
            self.redact.add(secret)
        configure(ClientLogHandler(self.redact, self._log_to_client), new.logLevel)
        self.chats.apply(new)
        log.info("settings applied (base URL %s)", new.baseUrl)
        message = describe_problems(problems) if problems else ""
        if message:
            log.warning("%s", message)
        if message and message != self._shown_problems:  # each change re-sends every setting: one pop-up
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))
        self._shown_problems = message
        return problems

    def _notify(self, method: str, params: Mapping[str, object]) -> None:
        self.protocol.notify(method, params)

    def _warn_user(self, message: str) -> None:
        self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    def _log_to_client(self, level: int, message: str) -> None:
        kind = _LSP_LEVELS.get(level, types.MessageType.Log)
        self.server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def notify_billed(self, billed: BilledNotification) -> None:
        self._notify("gateway/billed", billed)

    def notify_calibration(self, model: str, factor: float) -> None:
        calibration: Calibration = {"model": model, "factor": factor}
        self._notify("gateway/calibration", calibration)

    def notify_metrics(self, models: int) -> None:
        metrics: MetricsNotification = {"models": models}
        self._notify("gateway/metrics", metrics)

    # ---- methods ----

    async def models_list(self, params: object) -> ModelsResult:
        self.redact.add(api_key(params))  # a gateway may quote it back in an error, even of params it refuses
        return {"models": await self.chats.list_models(validated(KeyParams, params).apiKey, metrics=True)}

    async def chat(self, params: object) -> ChatResult:
        request = validated(ChatParams, params)
        if request.requestId in self._running:  # their parts would be told apart by requestId alone
            raise bad_request(
                f"A chat with requestId {request.requestId!r} is already running; each chat needs its own"
            )
        self._running.add(request.requestId)
        try:
            self.redact.add(request.apiKey)
            if request.group is not None and not request.apiKey:
                raise group_without_key()  # the environment's key is not this group's
            approval = Approval(request.approvedCost, request.approvedDay, request.approvedUnpriced)
            parts = _OutboxParts(self.outbox, request.requestId)
            outcome = await self.chats.chat(request, request.requestId, parts, request.apiKey, request.group, approval)
            return {
                "usage": outcome.usage,
                "finishReason": outcome.finish_reason,
                "responseId": outcome.response_id,
                "inputLimit": outcome.input_limit,
                "budgetFactor": outcome.budget_factor,
            }
        finally:
            self._running.discard(request.requestId)

    async def count_tokens(self, params: object) -> CountResult:
        request = validated(CountParams, params)
        return {"counts": await self.tokens.count(request.model, request.texts, background=request.background)}

    def count_tokens_now(self, params: object) -> CountResult | None:
        """`gateway/countTokens` answered in place when it can be (most of them), else None."""
        request = validated(CountParams, params)
        counts = self.tokens.count_now(request.model, request.texts)
        return None if counts is None else {"counts": counts}

    def count_tokens_handler(self, params: JsonValue) -> Generator[Any, Any, CountResult]:
        """`gateway/countTokens` for pygls, as a generator handler (pygls runs it in place, in the
        turn the request is read, and runs what it yields as a task): a small count with the
        tokenizer loaded is answered without a task, a larger one, or one while the tokenizer
        loads, awaits `count_tokens` (rfcs/0005, "A token count went through pygls' dispatch")."""
        try:
            counts = self.count_tokens_now(params)
        except JsonRpcException:
            raise
        except Exception as error:  # a bug of ours: answered like any other (params.rpc_errors)
            log.exception("internal error")
            message = f"Internal error in the sidecar ({type(error).__name__}); see the logs"
            raise JsonRpcException(message=message, code=INTERNAL_ERROR, data=error_data("internal")) from None
        if counts is not None:
            return counts
        counted: CountResult = yield rpc_errors(self.redact, self.count_tokens), (params,), {}
        return counted

    async def credits(self, params: object) -> Credits:
        self.redact.add(api_key(params))
        return await self.chats.ledger.credits(validated(KeyParams, params).apiKey)

    async def usage(self, params: object) -> UsageResult:
        request = validated(UsageParams, params)
        return await self.chats.ledger.usage(request.since, request.until, request.limit)

    def configure(self, params: object) -> ConfigureResult:
        request = validated(ConfigureParams, params)
        problems = self.apply(request.settings, request.baseUrl)
        if problems:  # the valid ones are applied; the caller learns which were not
            raise invalid_settings(problems)
        return {"ok": True}


class _OutboxParts:
    """A chat's parts as `gateway/parts` notifications for its requestId (outbox.py)."""

    def __init__(self, outbox: Outbox, request_id: str | int) -> None:
        self._outbox = outbox
        self._request_id = request_id

    def post(self, parts: list[PartOut]) -> None:
        self._outbox.post(self._request_id, parts)

    def flush(self) -> None:
        self._outbox.flush(self._request_id)

    def drop(self) -> None:
        self._outbox.drop(self._request_id)


def build_server(stdio: Mode | None = None) -> tuple[LanguageServer, Sidecar]:
    """`stdio`: how serve.py opened stdin and stdout, said once in the log (None in tests that write
    through a writer of their own)."""
    server = LanguageServer(
        "ai-gateway-lm", __version__, protocol_cls=WireProtocol, converter_factory=plain_params_converter
    )
    sidecar = Sidecar(server)

    @server.feature(types.INITIALIZE)
    def on_initialize(params: types.InitializeParams) -> None:
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        raw_settings = options.get("settings")
        settings: dict[str, object] = raw_settings if isinstance(raw_settings, dict) else {}
        base_url = options.get("baseUrl") if isinstance(options.get("baseUrl"), str) else None
        sidecar.apply(settings, base_url)
        if stdio is not None:
            log.info("sidecar %s on Python %s, stdio on %s", __version__, platform.python_version(), stdio)
        sidecar.tokens.schedule_preload()  # off the path of the first answer (rfcs/0005-performance.md)

    async def models(params: object) -> dict[str, list[dict[str, Any]]]:
        listed = await sidecar.models_list(params)
        return {"models": [entry.model_dump() for entry in listed["models"]]}  # the entries as the wire has them

    server.feature("gateway/models")(rpc_errors(sidecar.redact, models))
    server.feature("gateway/chat")(rpc_errors(sidecar.redact, sidecar.chat))

    def count_tokens(params: JsonValue) -> Generator[Any, Any, CountResult]:
        return (yield from sidecar.count_tokens_handler(params))  # a function: pygls marks what it registers

    server.feature("gateway/countTokens")(count_tokens)
    server.feature("gateway/configure")(rpc_errors(sidecar.redact, sync(sidecar.configure)))
    server.feature("gateway/credits")(rpc_errors(sidecar.redact, sidecar.credits))
    server.feature("gateway/usage")(rpc_errors(sidecar.redact, sidecar.usage))
    server.feature(REFUSED)(refused)
    return server, sidecar
