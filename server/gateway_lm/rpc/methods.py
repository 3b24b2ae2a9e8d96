"""The sidecar's JSON-RPC methods on a pygls server; `serve.py` runs it on stdio.

Contract: rfcs/0003-rpc-contract.md."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Generator, Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pydantic import JsonValue
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..accounting import Accounting, limit_from_message
from ..budget import BudgetFactors
from ..catalogue import ModelInfo, catalogue, input_budget
from ..client import GatewayClient
from ..counting import TokenService
from ..errors import GatewayError, group_without_key, refuses_lost_reasoning
from ..fit import InputLimit, fit_request, has_tool_results
from ..logs import ClientLogHandler, Redactor, configure
from ..picker import picker_entry
from ..pipeline import ChatOutcome, Prepared, prepare, stream_prepared
from ..settings import Settings, describe_problems, secrets_of, updated_settings
from ..spend.ledger import Approval, Ledger
from ..tokens import count_request
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
from .protocol import REFUSED, WireProtocol, refused

if TYPE_CHECKING:  # types only: contract.py's schema printing is no part of serving
    from ..contract import Calibration, ChatResult, ConfigureResult, CountResult, ModelsResult
    from ..spend.ledger import BilledNotification, UsageResult
    from ..spend.lookups import Credits

log = logging.getLogger(__name__)
# Settings the client is built from: a change rebuilds it (requests in flight finish on the old one).
TRANSPORT_SETTINGS = (
    "baseUrl",
    "connectTimeout",
    "idleTimeout",
    "requestTimeout",
    "maxRetries",
    "caBundle",
    "proxy",
    "proxyStrictSSL",
    "noProxy",
    "proxyAuthorization",
    "systemCertificates",
)
_LSP_LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}


class Sidecar:
    def __init__(self, server: LanguageServer) -> None:
        if not isinstance(server.protocol, WireProtocol):
            raise TypeError("the sidecar runs WireProtocol (protocol.py)")
        self.server = server
        self.protocol = server.protocol
        self.redact = Redactor()
        self.settings = Settings()
        self._client: GatewayClient | None = None  # built by the first apply(): TLS setup costs ~50 ms
        self.models: dict[str, ModelInfo] = {}
        self.accounting = Accounting()
        self.budget = BudgetFactors()  # the factor each advertised window was computed with
        self._background: set[asyncio.Future[None]] = set()
        self.tokens = TokenService()
        self.outbox = Outbox(self.protocol.notify)  # told of the stdout writer when serving starts
        self._shown_problems = ""  # the invalid settings last shown to the user
        self._chats: set[str | int] = set()  # requestIds of the chats running now
        self.ledger = Ledger(lambda: self.client, self.notify_billed, self._warn_user)
        self._listing: asyncio.Future[None] | None = None  # the catalogue a guarded chat waits for
        # Models that refused a tool call whose reasoning the history lost: their requests send such
        # calls as text from then on (rfcs/0002, "A history that lost its reasoning").
        self._needs_reasoning: set[str] = set()

    # ---- setup ----

    def apply(self, settings: Mapping[str, object], base_url: str | None = None) -> dict[str, str]:
        """Applies each valid setting; an invalid one keeps its value and costs one warning, shown
        once. Returns the invalid ones (name → why)."""
        new, problems = updated_settings(self.settings, {**settings, "baseUrl": base_url} if base_url else settings)
        transport_changed = any(getattr(new, f) != getattr(self.settings, f) for f in TRANSPORT_SETTINGS)
        for secret in secrets_of(new):  # a gateway or proxy may quote them back in an error
            self.redact.add(secret)
        configure(ClientLogHandler(self.redact, self._log_to_client), new.logLevel)
        if new.stateDir != self.settings.stateDir:
            self.accounting = Accounting(new.stateDir)
        self.settings = new
        self.ledger.apply(new)
        if self._client is None or transport_changed:
            # Built here, at initialize, before the tokenizer loads: built later, it would compete
            # with that load for the GIL on the way to the first answer.
            old, self._client = self._client, GatewayClient(new)
            if old is not None:
                self._in_background(old.aclose())  # requests in flight finish on the old one
        log.info("settings applied (base URL %s)", new.baseUrl)
        message = describe_problems(problems) if problems else ""
        if message:
            log.warning("%s", message)
        if message and message != self._shown_problems:  # each change re-sends every setting: one pop-up
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))
        self._shown_problems = message
        return problems

    @property
    def client(self) -> GatewayClient:
        if self._client is None:
            self._client = GatewayClient(self.settings)
        return self._client

    def _in_background(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _notify(self, method: str, params: Mapping[str, object]) -> None:
        self.protocol.notify(method, params)

    def _warn_user(self, message: str) -> None:
        self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    def _log_to_client(self, level: int, message: str) -> None:
        kind = _LSP_LEVELS.get(level, types.MessageType.Log)
        self.server.window_log_message(types.LogMessageParams(type=kind, message=message))

    # ---- methods ----

    async def models_list(self, params: object) -> ModelsResult:
        self.redact.add(api_key(params))  # a gateway may quote it back in an error, even of params it refuses
        raw = await self.client.list_models(validated(KeyParams, params).apiKey)
        models = [self._with_learned_limit(m) for m in catalogue(raw, self.settings.outputReservation)]
        self.models = {m.id: m for m in models}
        log.info("%d language models listed", len(models))
        entries = [
            picker_entry(m, self.budget.factor(m.id, self.accounting.factor(m.id)), self.settings.effort_for(m.id))
            for m in models
        ]
        return {"models": entries}

    async def _priced(self, model: str, key: str | None) -> ModelInfo | None:
        """The model's entry for the spend guard when this sidecar has not listed the models yet (a
        restart, or a start whose list came from the extension's cache): the list is fetched once,
        shared by the chats that wait for it. A failure leaves the model unpriced, which the guard
        asks about (rfcs/0006-spend.md)."""
        if not self.models:
            if self._listing is None or (self._listing.done() and not self.models):
                self._listing = asyncio.ensure_future(self._list_for_guard(key))
            await asyncio.shield(self._listing)
        return self.models.get(model)

    async def _list_for_guard(self, key: str | None) -> None:
        try:
            await self.models_list({"apiKey": key})
        except GatewayError as error:
            log.warning("the model list could not be read for the spend guard: %s", error.message)

    def _with_learned_limit(self, model: ModelInfo) -> ModelInfo:
        limit = self.accounting.limits.get(model.id)
        if limit is None:
            return model
        budget = input_budget(limit, model.maxOutputTokens, self.settings.outputReservation)
        return model.model_copy(update={"maxInputTokens": min(model.maxInputTokens, budget)})

    async def chat(self, params: object) -> ChatResult:
        request = validated(ChatParams, params)
        if request.requestId in self._chats:  # their parts would be told apart by requestId alone
            raise bad_request(
                f"A chat with requestId {request.requestId!r} is already running; each chat needs its own"
            )
        self._chats.add(request.requestId)
        try:
            return await self._chat(request)
        finally:
            self._chats.discard(request.requestId)

    async def _chat(self, request: ChatParams) -> ChatResult:
        self.redact.add(request.apiKey)
        if request.group is not None and not request.apiKey:
            raise group_without_key()  # the environment's key is not this group's
        known = self.models.get(request.model)
        if known is None and self.ledger.guards():
            known = await self._priced(request.model, request.apiKey)
        if known is not None and not known.capabilities.toolCalling and request.tools:
            log.info("tools withheld from %s: the model does not support them", request.model)
            request.tools = []
        factor = self.accounting.factor(request.model)
        # The learned limit at once, not from the next model list: Copilot keeps the turn's window,
        # and each later request of the turn would be refused and sent again (issue 36 §1).
        limit = None if known is None else InputLimit(self._with_learned_limit(known).maxInputTokens, factor)
        unreasoned_as_text = request.model in self._needs_reasoning
        prepared = await prepare(request, self.settings, known, limit, unreasoned_as_text)
        approval = Approval(request.approvedCost, request.approvedDay, request.approvedUnpriced)
        await self.ledger.guard(
            request.model, approval, prepared.body, known, factor, request.group
        )  # priced as sent; refused: not sent
        outcome = ChatOutcome()
        self.tokens.chat_started()  # the tokenizer's preload waits for streams in flight
        try:
            return await self._stream(request, prepared, outcome, known, limit)
        finally:
            self.tokens.chat_ended()

    async def _stream(
        self,
        request: ChatParams,
        prepared: Prepared,
        outcome: ChatOutcome,
        known: ModelInfo | None,
        limit: InputLimit | None,
    ) -> ChatResult:
        """The chat streamed; a first overflow on a limit lower than the list says is learned, and the
        same request, fitted to it, sent once more: the user sees the answer, and a log line. So is a
        first refusal of tool calls whose reasoning the history lost: sent once more with them as text."""
        shown: list[bool] = []
        try:
            return await self._stream_once(request, prepared, outcome, shown)
        except GatewayError as error:
            if refuses_lost_reasoning(error) and not shown and request.model not in self._needs_reasoning:
                again = await self._without_lost_reasoning(request, prepared, known, limit, error)
                if again is not None:
                    return await self._stream_once(request, again, ChatOutcome(), shown)
            if error.kind != "context_overflow":
                raise
            listed = self.models.get(request.model)
            learned = self.accounting.learn_limit(request.model, error.message)
            retry = None if shown else await self._refitted(request, prepared, listed, error)
            if retry is None:
                self._explain_limit(listed, learned, error)
                raise
        try:
            result = await self._stream_once(request, retry, ChatOutcome(), shown)
        except GatewayError as again:
            if again.kind == "context_overflow":
                self._explain_limit(listed, learned, again)
            raise
        # The list's window for the model follows the learned limit (fetched again, debounced).
        self.notify_calibration(request.model, self.accounting.factor(request.model))
        return result

    async def _without_lost_reasoning(
        self,
        request: ChatParams,
        prepared: Prepared,
        known: ModelInfo | None,
        limit: InputLimit | None,
        error: GatewayError,
    ) -> Prepared | None:
        """The request with the tool calls that lost their reasoning as text, or None when it has none;
        the model is remembered, so its later requests go so at once."""
        self._needs_reasoning.add(request.model)
        again = await prepare(request, self.settings, known, limit, unreasoned_as_text=True)
        if again.body["input"] == prepared.body["input"]:
            return None
        log.info(
            "chat %s: %s refused tool calls whose reasoning the history lost (%s); sent again with those"
            " calls as text, and so from now on for this model",
            request.requestId,
            request.model,
            error.message[:200],
        )
        return again

    async def _refitted(
        self, request: ChatParams, prepared: Prepared, listed: ModelInfo | None, error: GatewayError
    ) -> Prepared | None:
        """The request fitted to the limit an overflow names, or None when that changes nothing: the
        limit is no lower than the one it was fitted to, or it has no tool results to clear."""
        named = limit_from_message(error.message)
        if named is None or listed is None:
            return None
        budget = input_budget(named, listed.maxOutputTokens, self.settings.outputReservation)
        if budget >= listed.maxInputTokens or not has_tool_results(prepared.body):
            return None
        limit = InputLimit(budget, self.accounting.factor(request.model))
        body = await asyncio.to_thread(fit_request, prepared.body, request.model, limit)
        if body is prepared.body:
            return None
        log.info(
            "chat %s: %s refused it as too long for a %s-token limit (the list says %s); sent again fitted to it",
            request.requestId,
            request.model,
            f"{named:,}",
            f"{listed.contextWindow:,}",
        )
        return Prepared(body, prepared.names, prepared.headers)

    async def _stream_once(
        self, request: ChatParams, prepared: Prepared, outcome: ChatOutcome, shown: list[bool]
    ) -> ChatResult:
        """`shown` gets an entry once a part has gone to the client: the answer has begun."""
        log.info(
            "chat %s with %s: %d messages, %d tools",
            request.requestId,
            request.model,
            len(request.messages),
            len(request.tools),
        )
        try:
            # Parts leave at once, or together with later ones while the previous write is pending.
            chat = stream_prepared(prepared, request.model, self.client, request.apiKey, outcome)
            async for parts in chat:
                shown.append(True)
                self.outbox.post(request.requestId, parts)
        except asyncio.CancelledError:
            self.outbox.drop(request.requestId)
            log.info("chat %s cancelled", request.requestId)  # nothing is sent after this
            raise
        except GatewayError:
            self.outbox.flush(request.requestId)  # what was shown before the failure stands
            raise
        self.outbox.flush(request.requestId)  # every part precedes the result
        self._calibrate_later(request.model, outcome)
        known = self.models.get(request.model)
        self._in_background(
            self.ledger.settle(request.requestId, request.model, outcome, known, request.apiKey, request.group)
        )
        log.info("chat %s finished: %s, usage %s", request.requestId, outcome.finish_reason, outcome.usage)
        return {"usage": outcome.usage, "finishReason": outcome.finish_reason, "responseId": outcome.response_id}

    def _explain_limit(self, listed: ModelInfo | None, limit: int | None, error: GatewayError) -> None:
        if limit is None:
            return
        if listed is not None and limit >= listed.contextWindow:
            # The list already said so: the conversation simply grew past it. Claiming a change would
            # send the user looking for one (issue 12).
            error.message += f" The model's limit is {limit:,} tokens, as the model list says."
            return
        error.message += (
            f" The model's limit is {limit:,} tokens; the model list now says so, and VS Code will"
            " summarise the conversation before it gets that long."
        )

    def _calibrate_later(self, model: str, outcome: ChatOutcome) -> None:
        """Compares our estimate of the request with the reported input tokens, off the answer's path."""
        if outcome.usage is None or outcome.body is None:
            return
        body, reported = outcome.body, outcome.usage["inputTokens"]

        async def calibrate() -> None:
            estimate = await asyncio.to_thread(count_request, body, model)
            factor = self.accounting.observe(model, estimate, reported)
            # The window Copilot budgets with moves with the factor (budget.py); small moves wait.
            if factor is not None and self.budget.moves(model, factor):
                self.notify_calibration(model, factor)

        self._in_background(calibrate())

    def notify_billed(self, billed: BilledNotification) -> None:
        self._notify("gateway/billed", billed)

    def notify_calibration(self, model: str, factor: float) -> None:
        calibration: Calibration = {"model": model, "factor": factor}
        self._notify("gateway/calibration", calibration)

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
        return await self.ledger.credits(validated(KeyParams, params).apiKey)

    async def usage(self, params: object) -> UsageResult:
        request = validated(UsageParams, params)
        return await self.ledger.usage(request.since, request.until, request.limit)

    def configure(self, params: object) -> ConfigureResult:
        request = validated(ConfigureParams, params)
        problems = self.apply(request.settings, request.baseUrl)
        if problems:  # the valid ones are applied; the caller learns which were not
            raise invalid_settings(problems)
        return {"ok": True}


def build_server() -> tuple[LanguageServer, Sidecar]:
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
