"""The chat service both front ends share (the sidecar's `gateway/chat`, the CLI's `chat`): a chat's
whole sequence around the path `pipeline.py` runs. The model priced from the list (fetched once when
the spend guard needs it), the request prepared and guarded as it will be sent, streamed to the
front end's parts, sent once more after a first overflow on a limit lower than the list says
(learned, refitted) or a first refusal of tool calls whose reasoning the history lost, then
calibrated and settled off the answer's path. The models' metrics (how fast, how reliable) are
fetched in the background after a listing the picker asked for, never on a chat's path. A model's
window as listed holds while an agent turn on it goes on (`_Turns`): Copilot budgets a turn with
the window it started with, and the usage part tells it how full the real limit is in that window's
unit (rfcs/0004, "The rest of the turn").

It knows no JSON-RPC: the front end validates what comes in, gives it a `Parts` for the answer and
shapes what goes back (rfcs/0001-architecture.md, "Folders"; tests/test_layers.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from .gateway.client import GatewayClient
from .gateway.errors import GatewayError, refuses_lost_reasoning
from .messages import ChatRequest, PartOut
from .offer.budget import BudgetFactors
from .offer.catalogue import ModelInfo, catalogue, input_budget
from .offer.contextsize import MENU_KEY as CONTEXT_KEY
from .offer.contextsize import chosen_tokens
from .offer.metrics import QUERY as METRICS_QUERY
from .offer.metrics import ModelMetrics, metrics_from
from .offer.picker import ModelEntry, context_options, picker_entry
from .offer.speed import preselected
from .offer.virtual import MAX_VIRTUAL_BODY, VIRTUAL_READ_TIMEOUT, virtual_model
from .pipeline import ChatOutcome, Prepared, prepare, stream_prepared
from .request.fit import ClearedResults, InputLimit, fit_request, has_tool_results
from .request.translate import is_summarisation_turn
from .settings import Settings
from .spend.ledger import Approval, Ledger
from .tokens.accounting import Accounting, limit_from_message
from .tokens.counting import TokenService
from .tokens.tokenizer import count_request

if TYPE_CHECKING:
    from .spend.ledger import BilledNotification

__all__ = ["TRANSPORT_SETTINGS", "Approval", "ChatService", "Parts"]  # Approval: what a front end passes in

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
# How often the models' metrics are fetched again, at most: the gateway measures over the last hour,
# and each change re-renders the picker (rfcs/0003, "Model metrics").
METRICS_EVERY = 600.0
# The answers of a gateway without the endpoint: its metrics are gone. Any other failure (a timeout, a
# 5xx, a rate limit) keeps those shown until the next fetch.
NO_ENDPOINT = frozenset({404, 405, 410, 501})


class Parts(Protocol):
    """Where one chat's parts go: the sidecar's outbox for its requestId, the CLI's terminal."""

    def post(self, parts: list[PartOut]) -> None:
        """Parts leave at once, or together with later ones while the previous write is pending."""

    def flush(self) -> None:
        """Every part posted is written: before the result, and what was shown before a failure."""

    def drop(self) -> None:
        """The chat was cancelled: nothing more is sent."""


class ChatService:
    """The models as last listed, what was learned of them, the spend ledger and the client, and
    the chats that use them. `keeps_accounts`: the sidecar's chats learn limits, calibrate and
    record their usage; the CLI's one-shot chats keep none of it, as it never has."""

    def __init__(
        self,
        billed: Callable[[BilledNotification], None] = lambda billed: None,
        calibrated: Callable[[str, float], None] = lambda model, factor: None,
        warn_user: Callable[[str], None] = lambda message: None,
        keeps_accounts: bool = True,
        metrics_changed: Callable[[int], None] = lambda models: None,
    ) -> None:
        self.settings = Settings()
        self._client: GatewayClient | None = None  # built by the first apply(): TLS setup (rfcs/0005, "Measured costs")
        self.models: dict[str, ModelInfo] = {}
        self.accounting = Accounting()
        self.budget = BudgetFactors()  # the factor each advertised window was computed with
        self.tokens = TokenService()
        self.ledger = Ledger(lambda: self.client, billed, warn_user)
        self._calibrated = calibrated
        self._turns = _Turns()
        self._keeps_accounts = keeps_accounts
        self._background: set[asyncio.Future[None]] = set()
        self._listing: asyncio.Future[None] | None = None  # the catalogue a guarded chat waits for
        # Models that refused a tool call whose reasoning the history lost: their requests send such
        # calls as text from then on (rfcs/0002, "A history that lost its reasoning").
        self._needs_reasoning: set[str] = set()
        self._virtual_silent: dict[str, str] = {}  # virtual model → why the gateway said nothing, as last logged
        # The models' metrics as last fetched (offer/metrics.py), when, and whether a failure to get
        # them was logged since the last success: a gateway without the endpoint is said once.
        self.metrics: dict[str, ModelMetrics] = {}
        self._metrics_at = -METRICS_EVERY
        self._metrics_failure_told = False
        self._metrics_changed = metrics_changed
        # The tool results a request was sent with cleared: cleared again in the later requests of
        # their conversation, which keeps its prefix in the prompt cache (rfcs/0011).
        self._cleared = ClearedResults()

    # ---- setup ----

    def apply(self, new: Settings) -> None:
        """Settings already validated (settings.updated_settings): the state folder, the ledger and,
        when its settings changed, the client follow them."""
        transport_changed = any(getattr(new, f) != getattr(self.settings, f) for f in TRANSPORT_SETTINGS)
        if new.baseUrl != self.settings.baseUrl:  # another gateway: its own metrics, or none
            self.metrics, self._metrics_at, self._metrics_failure_told = {}, -METRICS_EVERY, False
        if new.stateDir != self.settings.stateDir:
            self.accounting.close()  # what it could not save yet goes to its own folder
            self.accounting = Accounting(new.stateDir)
        self.settings = new
        self.ledger.apply(new)
        if self._client is None or transport_changed:
            # Built here, at initialize, before the tokenizer loads: built later, it would compete
            # with that load for the GIL on the way to the first answer.
            old, self._client = self._client, GatewayClient(new)
            if old is not None:
                self._in_background(old.aclose())  # requests in flight finish on the old one

    @property
    def client(self) -> GatewayClient:
        if self._client is None:
            self._client = GatewayClient(self.settings)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    def _in_background(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- the models ----

    async def list_models(self, api_key: str | None, metrics: bool = False) -> list[ModelEntry]:
        """The gateway's language models as the picker gets them, each window with what was learned
        of its model and the metrics last fetched; kept, so chats are priced and fitted with them.
        `metrics`: the picker asked, so the metrics are fetched after it when they are due (never
        for the spend guard's listing, which a chat waits for)."""
        raw = await self.client.list_models(api_key)
        listed = catalogue(raw, self.settings.outputReservation)
        listed += await self._virtual_models({m.id for m in listed}, api_key)
        models = [self._with_learned_limit(m) for m in listed]
        self.models = {m.id: m for m in models}
        log.info("%d language models listed", len(models))
        if metrics and time.monotonic() - self._metrics_at >= METRICS_EVERY:
            self._metrics_at = time.monotonic()  # a failure waits as long as a success
            self._in_background(self._fetch_metrics(api_key))
        return [self._turns.listed(self._entry(m)) for m in models]

    async def _virtual_models(self, listed: set[str], api_key: str | None) -> list[ModelInfo]:
        """The virtual models the user added that the list lacks, each with what the gateway says of it
        (offer/virtual.py): read at once, each bounded; one that cannot be read is offered with defaults."""
        wanted = [model for model in self.settings.virtualModels if model not in listed]
        answers = await asyncio.gather(*(self._virtual_answer(model, api_key) for model in wanted))
        reservation = self.settings.outputReservation
        return [virtual_model(model, answer, reservation) for model, answer in zip(wanted, answers, strict=True)]

    async def _virtual_answer(self, model: str, api_key: str | None) -> Any:
        try:
            read = self.client.get_json(f"/models/{model}", api_key, limit=MAX_VIRTUAL_BODY)
            return await asyncio.wait_for(read, VIRTUAL_READ_TIMEOUT)
        except (GatewayError, asyncio.TimeoutError) as error:
            said = error.message if isinstance(error, GatewayError) else f"no answer in {VIRTUAL_READ_TIMEOUT:g} s"
            if self._virtual_silent.get(model) != said:  # once per model and answer, not every list
                self._virtual_silent[model] = said
                log.info("the gateway says nothing of the virtual model %s (%s): offered with defaults", model, said)
            return None

    async def _fetch_metrics(self, api_key: str | None) -> None:
        """The models' metrics, in the background; the front end is told when they changed, and
        lists the models again. A gateway without the endpoint (NO_ENDPOINT) or an answer that is
        not the list shows none; another failure keeps what was shown."""
        base = self.settings.baseUrl
        try:
            found = metrics_from(await self.client.model_metrics(api_key, METRICS_QUERY))
            failure = "its answer is not the list expected" if found is None else ""
        except GatewayError as error:
            found = None if error.status in NO_ENDPOINT else self.metrics
            failure = error.message
        if base != self.settings.baseUrl:
            return  # asked of the gateway before: its numbers are not this one's
        if failure:
            (log.debug if self._metrics_failure_told else log.warning)(
                "the gateway's model metrics were not read, so no model shows them: %s", failure
            )
            self._metrics_failure_told = True
        else:
            self._metrics_failure_told = False
        found = found or {}
        if found != self.metrics:
            self.metrics = found
            log.info("model metrics for %d models", len(found))
            self._metrics_changed(len(found))

    def _entry(self, model: ModelInfo) -> ModelEntry:
        """The model as the picker gets it now, with what was learned of it."""
        return picker_entry(
            model,
            self._budget_factor(model.id),
            self.settings.effort_for(model.id),
            preselected(model, model.id, self.settings.speed_for(model.id), self.settings.serviceTier),
            self.metrics.get(model.id),
        )

    async def _priced(self, model: str, key: str | None) -> ModelInfo | None:
        """The model's entry for the spend guard when the models have not been listed yet (a
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
            await self.list_models(key)
        except GatewayError as error:
            log.warning("the model list could not be read for the spend guard: %s", error.message)

    def _with_learned_limit(self, model: ModelInfo) -> ModelInfo:
        limit = self.accounting.limits.get(model.id)
        if limit is None:
            return model
        budget = input_budget(limit, model.maxOutputTokens, self.settings.outputReservation)
        return model.model_copy(update={"maxInputTokens": min(model.maxInputTokens, budget)})

    def _budget_factor(self, model_id: str) -> float:
        """The factor VS Code's window and the context-size menu's values are in (budget.py)."""
        return self.budget.factor(model_id, self.accounting.factor(model_id))

    def _paid_for(self, model: ModelInfo, request: ChatRequest) -> int:
        """The input limit a request is fitted into: the model's window, or the context size chosen in
        the chat input (contextsize.py), whose longer tier's rates the user did not choose to pay. The
        options are the menu's as listed, so each stands for at most the window."""
        options = context_options(model, self._budget_factor(model.id))
        chosen = chosen_tokens(options, request.modelConfiguration.get(CONTEXT_KEY))
        return model.maxInputTokens if chosen is None else chosen

    # ---- a chat ----

    async def chat(
        self,
        request: ChatRequest,
        request_id: str | int,
        parts: Parts,
        api_key: str | None = None,
        group: str | None = None,
        approval: Approval | None = None,
    ) -> ChatOutcome:
        """Raises GatewayError (a `spend_limit` refusal before anything is sent)."""
        known = self.models.get(request.model)
        if known is None and self.ledger.guards():
            known = await self._priced(request.model, api_key)
        # An agent's step (it offers tools) and not one of Copilot's summaries, which run beside the
        # turn: its answer says whether the turn goes on.
        step = bool(request.tools) and not is_summarisation_turn(request.messages)
        if known is not None and not known.capabilities.toolCalling and request.tools:
            log.info("tools withheld from %s: the model does not support them", request.model)
            request.tools = []
        factor = self.accounting.factor(request.model)
        # The learned limit at once, not from the next model list: Copilot keeps the turn's window,
        # and each later request of the turn would be refused and sent again (issue 36 §1).
        limit = None if known is None else InputLimit(self._paid_for(self._with_learned_limit(known), request), factor)
        unreasoned_as_text = request.model in self._needs_reasoning
        prepared = await prepare(request, self.settings, known, limit, unreasoned_as_text, self._cleared)
        await self.ledger.guard(
            request.model, approval or Approval(), prepared.body, known, factor, group
        )  # priced as sent; refused: not sent
        chat = _Chat(request, request_id, parts, api_key, group)
        self.tokens.chat_started()  # the tokenizer's preload waits for streams in flight
        if step:
            self._turns.step(request.model)
            if known is not None and not self._turns.has_listed(known.id):
                # Not listed by this process: VS Code has the extension's cached entry, which an
                # earlier listing made with what was known then, as now.
                self._turns.remember(self._entry(self._with_learned_limit(known)))
        goes_on = False
        try:
            outcome = await self._stream(chat, prepared, known, limit)
            goes_on = outcome.finish_reason == "toolCalls"
        finally:  # an answer without a tool call, an error or a cancel ends Copilot's turn
            self.tokens.chat_ended()
            if step and self._turns.stepped(request.model, goes_on):
                self._calibrated(request.model, self.accounting.factor(request.model))
        if known is not None:
            # What the request was fitted to now (a limit learned in it included), and the factor of
            # the window listed once the turn is over: the usage part's unit (rfcs/0004).
            outcome.input_limit = self._paid_for(self._with_learned_limit(known), request)
            outcome.budget_factor = self._budget_factor(request.model)
        return outcome

    async def _stream(
        self, chat: _Chat, prepared: Prepared, known: ModelInfo | None, limit: InputLimit | None
    ) -> ChatOutcome:
        """The chat streamed; a first overflow on a limit lower than the list says is learned, and the
        same request, fitted to it, sent once more: the user sees the answer, and a log line. So is a
        first refusal of tool calls whose reasoning the history lost: sent once more with them as text."""
        model = chat.request.model
        try:
            return await self._stream_once(chat, prepared)
        except GatewayError as error:
            if refuses_lost_reasoning(error) and not chat.shown and model not in self._needs_reasoning:
                again = await self._without_lost_reasoning(chat, prepared, known, limit, error)
                if again is not None:
                    return await self._stream_once(chat, again)
            if error.kind != "context_overflow" or not self._keeps_accounts:
                raise
            listed = self.models.get(model)
            learned = self.accounting.learn_limit(model, error.message)
            retry = None if chat.shown else await self._refitted(chat, prepared, listed, error)
            if retry is None:
                _explain_limit(listed, learned, error)
                raise
        try:
            result = await self._stream_once(chat, retry)
        except GatewayError as again:
            if again.kind == "context_overflow":
                _explain_limit(listed, learned, again)
            raise
        # The list's window for the model follows the learned limit once the turn is over.
        self._window_moved(model)
        return result

    async def _without_lost_reasoning(
        self,
        chat: _Chat,
        prepared: Prepared,
        known: ModelInfo | None,
        limit: InputLimit | None,
        error: GatewayError,
    ) -> Prepared | None:
        """The request with the tool calls that lost their reasoning as text, or None when it has none;
        the model is remembered, so its later requests go so at once."""
        request = chat.request
        self._needs_reasoning.add(request.model)
        again = await prepare(request, self.settings, known, limit, True, self._cleared)
        if again.body["input"] == prepared.body["input"]:
            return None
        log.info(
            "chat %s: %s refused tool calls whose reasoning the history lost (%s); sent again with those"
            " calls as text, and so from now on for this model",
            chat.request_id,
            request.model,
            error.message[:200],
        )
        return again

    async def _refitted(
        self, chat: _Chat, prepared: Prepared, listed: ModelInfo | None, error: GatewayError
    ) -> Prepared | None:
        """The request fitted to the limit an overflow names, or None when that changes nothing: the
        limit is no lower than the one it was fitted to, or it has no tool results to clear."""
        named = limit_from_message(error.message)
        if named is None or listed is None:
            return None
        budget = input_budget(named, listed.maxOutputTokens, self.settings.outputReservation)
        if budget >= listed.maxInputTokens or not has_tool_results(prepared.body):
            return None
        model = chat.request.model
        limit = InputLimit(budget, self.accounting.factor(model))
        body = await asyncio.to_thread(fit_request, prepared.body, model, limit, None, self._cleared)
        if body is prepared.body:
            return None
        log.info(
            "chat %s: %s refused it as too long for a %s-token limit (the list says %s); sent again fitted to it",
            chat.request_id,
            model,
            f"{named:,}",
            f"{listed.contextWindow:,}",
        )
        return Prepared(body, prepared.names, prepared.headers)

    async def _stream_once(self, chat: _Chat, prepared: Prepared) -> ChatOutcome:
        """One request sent and its answer streamed to the chat's parts; `chat.shown` once a part
        has gone: the answer has begun, and is never sent again."""
        request, parts = chat.request, chat.parts
        log.info(
            "chat %s with %s: %d messages, %d tools",
            chat.request_id,
            request.model,
            len(request.messages),
            len(request.tools),
        )
        outcome = ChatOutcome()
        try:
            async for batch in stream_prepared(
                prepared, request.model, self.client, chat.api_key, outcome, self.models
            ):
                chat.shown = True
                parts.post(batch)
        except asyncio.CancelledError:
            parts.drop()
            log.info("chat %s cancelled", chat.request_id)  # nothing is sent after this
            raise
        except GatewayError:
            parts.flush()  # what was shown before the failure stands
            raise
        parts.flush()  # every part precedes the result
        if self._keeps_accounts:
            self._calibrate_later(request.model, outcome)
            # Priced as the model that answered: a routing rule's destination, when one rewrote it.
            served = outcome.usage.get("servedModel") if outcome.usage is not None else None
            known = self.models.get(served or request.model)
            self._in_background(
                self.ledger.settle(chat.request_id, request.model, outcome, known, chat.api_key, chat.group)
            )
        log.info("chat %s finished: %s, usage %s", chat.request_id, outcome.finish_reason, outcome.usage)
        return outcome

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
                self._window_moved(model)

        self._in_background(calibrate())

    # ---- the window a turn holds ----

    def _window_moved(self, model: str) -> None:
        """The model's listed window moved (a factor or a limit learned): the extension fetches the
        list and tells VS Code, at once, or when the turn on the model is over."""
        if self._turns.defer(model):
            log.info("the window of %s moves when the agent's turn on it is over", model)
            return
        self._calibrated(model, self.accounting.factor(model))


class _Turns:
    """Per model, whether an agent turn on it goes on, and the entry VS Code was listed for it.

    Copilot Chat builds a turn's endpoint once and copies the model's `maxInputTokens` into it
    (`ExtensionContributedChatEndpoint`), so a window moved mid-turn never reaches that turn; and
    VS Code hands the provider the model as last listed. Holding the listed entry until the turn is
    over keeps the two the same, so the usage part can be put in the unit of the window the turn
    budgets with. A turn goes on while its steps' answers call tools (a step in flight holds it too:
    its answer may); an answer without a call, an error or a cancel ends it. A summary request runs
    beside the turn and leaves it as it is."""

    def __init__(self) -> None:
        self._open: set[str] = set()  # the last step's answer called tools
        self._stepping: dict[str, int] = {}  # steps in flight
        self._deferred: set[str] = set()  # models whose window moved during their turn
        self._listed: dict[str, ModelEntry] = {}

    def _holds(self, model: str) -> bool:
        return model in self._open or self._stepping.get(model, 0) > 0

    def listed(self, entry: ModelEntry) -> ModelEntry:
        """The entry to list: the one listed before while the model's turn goes on, else `entry`."""
        held = self._listed.get(entry.id)
        if held is not None and self._holds(entry.id):
            return held
        self._listed[entry.id] = entry
        return entry

    def has_listed(self, model: str) -> bool:
        return model in self._listed

    def remember(self, entry: ModelEntry) -> None:
        """The entry VS Code has for a model this process has not listed."""
        self._listed.setdefault(entry.id, entry)

    def step(self, model: str) -> None:
        """A step on `model` starts."""
        self._stepping[model] = self._stepping.get(model, 0) + 1

    def stepped(self, model: str, goes_on: bool) -> bool:
        """A step on `model` is over; `goes_on`: its answer called tools. Whether the turn is over
        with a window move deferred in it, which must be told now."""
        left = self._stepping.get(model, 1) - 1
        if left > 0:
            self._stepping[model] = left
        else:
            self._stepping.pop(model, None)
        if goes_on:
            self._open.add(model)
        else:
            self._open.discard(model)
        if self._holds(model) or model not in self._deferred:
            return False
        self._deferred.discard(model)
        return True

    def defer(self, model: str) -> bool:
        """Whether a window move waits for the end of the model's turn (it is then remembered)."""
        if self._holds(model):
            self._deferred.add(model)
            return True
        return False


class _Chat:
    """One chat on its way: what was asked, by whom, where its parts go, and whether any has gone."""

    def __init__(
        self, request: ChatRequest, request_id: str | int, parts: Parts, api_key: str | None, group: str | None
    ) -> None:
        self.request = request
        self.request_id = request_id
        self.parts = parts
        self.api_key = api_key
        self.group = group
        self.shown = False


def _explain_limit(listed: ModelInfo | None, limit: int | None, error: GatewayError) -> None:
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
