"""Spend around each chat: the guard before it is sent, its usage record and billed cost after it
answered; and what `gateway/credits` and `gateway/usage` answer (rfcs/0006-spend.md).

Nothing here is on the answer's path but the guard, which runs only when a limit is set. The record
is written, the generation looked up and `gateway/billed` sent in the background after the chat's
result has left; a failure there costs a log line, never the chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import math
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from typing_extensions import TypedDict

from ..gateway.client import GatewayClient
from ..messages import UsagePart
from ..offer.catalogue import ModelInfo, Pricing
from ..offer.speed import UNPRICED_TIERS, asked_tier, sent_pricing, tiers
from ..pipeline import ChatOutcome
from ..settings import Settings
from ..stream.usage import MAX_ID, bounded_saving, bounded_usd
from ..tokens.tokenizer import count_request
from .history import DB_NAME, EVERY, GUARD_READ_TIMEOUT_S, Every, UsageRecord, UsageStore, utc_day
from .lookups import Credits, Generation, look_up, read_credits
from .prices import CacheKeys, asks_caching, cache_saved, check, request_estimate, unpriced_refusal, usage_cost

log = logging.getLogger(__name__)
REOPEN_INTERVAL_S = 10.0  # an unusable history is tried again at most this often
MAX_PENDING = 10_000  # records kept in memory while the history cannot be written
_T = TypeVar("_T")


@dataclass(frozen=True)
class Approval:
    """What the user approved after the guard asked (rfcs/0006-spend.md): a request estimated at most
    `cost` USD passes the request limit; `day` lets this request pass the day limit; `unpriced` lets a
    request on a model without a price pass both."""

    cost: float | None = None
    day: bool = False
    unpriced: bool = False


class UsageResult(TypedDict):
    records: list[UsageRecord]  # newest first
    dayTotal: float | None  # USD spent today (UTC) by every window and key; None: the history cannot be read
    problem: str | None  # why the history cannot be used now (the dashboard says so)


class BilledNotification(TypedDict):
    """Sent once per chat, after its result: the billed record, or the estimate when the lookup gave up."""

    requestId: str | int
    record: UsageRecord


class Ledger:
    """The spend around each chat. The usage history may be unusable for a while (another program
    holds a lock, the file is damaged, the folder is read-only): records then wait in memory and are
    written once it can be used again, today's total is what was last read plus what this process
    spent since, and the user is told once (rfcs/0006-spend.md, "When the history cannot be used")."""

    def __init__(
        self,
        client: Callable[[], GatewayClient],
        notify: Callable[[BilledNotification], None],
        tell: Callable[[str], None] = lambda message: None,
    ) -> None:
        self._client = client
        self._notify = notify
        self._tell = tell  # a warning the user sees (once per cause)
        self.settings = Settings()
        self.store: UsageStore | None = None
        self.problem: str | None = None  # why the history cannot be used now
        self._told: set[str] = set()
        self._unpriced: set[str] = set()  # models a guarded request went out on without a price, once each
        self.cache_keys = CacheKeys()  # what the guard expects a request to read from the prompt cache
        self._pending: dict[str, UsageRecord] = {}  # records not written yet, by their row's key
        # Per provider group (None: the default key; EVERY: all of them), as last read from the history:
        # (UTC day, total), and today's records written after that read (row key → USD).
        self._day_read: dict[str | Every | None, tuple[str, float]] = {}
        self._since_read: dict[str | Every | None, dict[str, float]] = {}
        self._opened_at = 0.0  # monotonic time of the last attempt to open the history
        self._reopening: set[asyncio.Future[None]] = set()

    def apply(self, settings: Settings) -> None:
        if settings.stateDir != self.settings.stateDir:
            if self.store is not None:
                self.store.close()
            self.store = None
            self._day_read, self._since_read = {}, {}
            self.settings = settings
            self._open()
        elif self.store is not None:
            self.store.retain(settings.usageRetentionDays)
        self.settings = settings

    def _open(self) -> None:
        self._opened_at = time.monotonic()
        state_dir = self.settings.stateDir
        if not state_dir:
            return
        try:
            self.store = UsageStore.open(state_dir, self.settings.usageRetentionDays)
        except (sqlite3.Error, OSError) as error:
            self._trouble(f"the usage history {Path(state_dir) / DB_NAME} cannot be opened ({error})")
            return
        if self.problem is not None:
            log.info("the usage history can be used again")
        self.problem = None

    def _trouble(self, problem: str) -> None:
        self.problem = problem
        log.warning("%s", problem)
        cause = problem.split(" (", 1)[0]  # the same trouble again with another errno is not news
        if cause in self._told:
            return
        self._told.add(cause)
        self._tell(
            f"Vercel AI Gateway: {problem}. Chats still work; their usage records are kept in memory"
            " and written when the history can be used again."
        )

    # ---- before a chat ----

    def guards(self) -> bool:
        return self.settings.maxRequestCost is not None or self.settings.maxDailyCost is not None

    async def guard(
        self,
        model_id: str,
        approval: Approval,
        body: dict[str, Any],
        model: ModelInfo | None,
        factor: float,
        group: str | None = None,
    ) -> None:
        """Raises `spend_limit` when the estimate of `body` (the request as it will be sent: translated
        and fitted, pipeline.prepare) passes a limit the user set, or when a limit is set and the
        estimate or today's spend cannot be known: the limits fail closed (rfcs/0006-spend.md)."""
        settings = self.settings
        if not self.guards():
            return
        pricing = sent_pricing(model, body) if model is not None else Pricing()  # a fast request: its tier's
        max_output = settings.maxOutputTokens or (model.maxOutputTokens if model is not None else 0)
        if request_estimate(0, pricing, max_output) is None:
            tier = asked_tier(body)
            unpriced_tier = tier if tier in UNPRICED_TIERS and tiers(model_id) and model is not None else None
            if not approval.unpriced:
                raise unpriced_refusal(model_id, settings, unpriced_tier)
            if model_id not in self._unpriced:
                self._unpriced.add(model_id)
                log.info("%s has no price in the model list: sent as the user approved", model_id)
            return
        tokens = math.ceil(await asyncio.to_thread(count_request, body, model_id) * factor)
        cached = self.cache_keys.expected_reads(model_id, body, tokens)
        estimate = request_estimate(tokens, pricing, max_output, cached, asks_caching(body)) or 0.0
        # The day limit holds per key: a group's requests count its own spend only (rfcs/0010).
        spent = await self.spent_today(GUARD_READ_TIMEOUT_S, group) if settings.maxDailyCost is not None else 0.0
        check(estimate, settings, spent, approval.cost, approval.day, self.problem)

    async def spent_today(self, wait: float | None = None, group: str | Every | None = EVERY) -> float | None:
        """USD spent today (UTC) by every window, with one provider group's key (None: the default
        key) or every key; None when the history has not been read today. A read that fails or
        waits past `wait` falls back to the last read plus what this process wrote since, so a lock
        another program holds neither stops nor delays a chat."""
        today = utc_day()
        total = await self._in_store(lambda store: store.day_total(today, wait, group), "read", wait)
        if total is not None:
            self._day_read[group] = (today, total)
            self._since_read[group] = {}
            return total + self._pending_today(today, group)
        read = self._day_read.get(group)
        if read is None or read[0] != today:
            return None
        since = self._since_read.get(group, {})
        return read[1] + math.fsum(since.values()) + self._pending_today(today, group)

    def _pending_today(self, today: str, group: str | Every | None) -> float:
        return math.fsum(r["cost"] or 0.0 for r in self._pending.values() if r["time"][:10] == today and _of(r, group))

    # ---- after a chat ----

    async def settle(
        self,
        request_id: str | int,
        model: str,
        outcome: ChatOutcome,
        known: ModelInfo | None,
        api_key: str | None,
        group: str | None = None,
    ) -> None:
        """Records the chat's usage at once (the estimate), then its billed cost when the gateway has it."""
        if outcome.usage is None:
            return  # no answer to account for: failed, cancelled, or a gateway that reports no usage
        if outcome.body is not None:  # the prefix its conversation's next request may read
            usage = outcome.usage
            self.cache_keys.answered(model, outcome.body, usage["cachedTokens"] + usage["cacheWriteTokens"])
        try:
            record = estimated(model, outcome.usage, outcome.response_id, known, group)
            from_response = record["id"] if record["id"] == outcome.response_id else None  # not our uuid
            pricing = known.pricing if known is not None else None
            await self._settle(
                request_id, record, outcome.generation_id or from_response, api_key, outcome.usage, pricing
            )
        except Exception as error:  # a background task: nobody else would hear of it
            log.warning("the usage of chat %s was not recorded: %s: %s", request_id, type(error).__name__, error)

    async def _settle(
        self,
        request_id: str | int,
        record: UsageRecord,
        lookup_id: str | None,
        api_key: str | None,
        usage: UsagePart | None = None,
        pricing: Pricing | None = None,
    ) -> None:
        key = uuid.uuid4().hex  # the row's, so the billed record replaces this estimate
        await self._put(key, record)
        generation = await look_up(self._client(), lookup_id, api_key) if lookup_id else None
        if generation is not None:
            record = billed(record, generation, usage, pricing)
            await self._put(key, record)
        self._notify({"requestId": request_id, "record": record})

    # ---- what the dashboard and the status bar read ----

    async def credits(self, api_key: str | None) -> Credits:
        return await read_credits(self._client(), api_key)

    async def usage(self, since: datetime.date | None, until: datetime.date | None, limit: int) -> UsageResult:
        """The records of the UTC days `since` … `until` (both included), newest first, at most `limit`."""
        first = since.isoformat() if since else None
        last = until.isoformat() if until else None
        records = await self._in_store(lambda store: store.records(first, last, limit), "read") or []
        waiting = [r for r in self._pending.values() if (first or "") <= r["time"][:10] <= (last or "9999-12-31")]
        if waiting:  # not written yet, but spent: the dashboard shows them
            records = sorted([*records, *waiting], key=lambda r: r["time"], reverse=True)[:limit]
        spent = await self.spent_today()
        return {"records": records, "dayTotal": spent, "problem": self.problem}

    # ---- the store, from a worker thread ----

    async def _in_store(self, work: Callable[[UsageStore], _T], doing: str, wait: float | None = None) -> _T | None:
        """`work` on the history in a worker thread; None when it cannot be used now (the trouble is
        told once; a history that could not be opened is tried again off the caller's path). With
        `wait` (the spend guard, on a chat's path), a history that could not be opened is tried again
        now, whenever it was last tried, and waited for that long: otherwise the first chat after a
        lock is released would be refused on the old failure while the new attempt runs behind it."""
        store = self.store
        if store is None:
            reopening = self._reopen_later(urgent=wait is not None)
            if reopening is None or wait is None:
                return None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(reopening), wait)
            store = self.store
            if store is None:
                return None
        try:
            return await asyncio.to_thread(work, store)
        except sqlite3.Error as error:  # busy past the timeout, a full disk, a damaged file
            self._trouble(f"the usage history {store.path} cannot be {doing} ({error})")
            return None

    async def _put(self, key: str, record: UsageRecord) -> None:
        self._pending[key] = record
        if self.store is None and time.monotonic() - self._opened_at >= REOPEN_INTERVAL_S:
            await asyncio.to_thread(self._open)
        store = self.store
        if store is None:
            self._bound_pending()
            return
        for waiting_key, waiting in list(self._pending.items()):  # oldest first: dicts keep their order
            try:
                await asyncio.to_thread(store.put, waiting_key, waiting)
            except sqlite3.Error as error:  # busy past the timeout, a full disk, a damaged file
                self._trouble(f"the usage history {store.path} cannot be written ({error})")
                self._bound_pending()
                return
            if self._pending.get(waiting_key) is waiting:
                del self._pending[waiting_key]
            if waiting["time"][:10] == utc_day():
                for group, since in self._since_read.items():
                    if _of(waiting, group):
                        since[waiting_key] = waiting["cost"] or 0.0
        if self.problem is not None:
            log.info("the usage history can be written again; every record kept in memory is in it")
            self.problem = None

    def _bound_pending(self) -> None:
        while len(self._pending) > MAX_PENDING:
            dropped = next(iter(self._pending))
            del self._pending[dropped]
            log.warning("usage history: %d records wait in memory; the oldest was dropped", MAX_PENDING)

    def _reopen_later(self, urgent: bool = False) -> asyncio.Future[None] | None:
        """Tries to open the history again off the caller's path (opening may wait for a lock): at most
        every REOPEN_INTERVAL_S, or at once when `urgent`; one attempt at a time. The attempt under
        way, if any."""
        if self._reopening:
            return next(iter(self._reopening))
        if self.settings.stateDir and (urgent or time.monotonic() - self._opened_at >= REOPEN_INTERVAL_S):
            self._opened_at = time.monotonic()
            task = asyncio.ensure_future(asyncio.to_thread(self._open))
            self._reopening.add(task)
            task.add_done_callback(self._reopening.discard)
            return task
        return None


def _of(record: UsageRecord, group: str | Every | None) -> bool:
    """Whether the record is one of `group`'s (EVERY: of any group)."""
    return isinstance(group, Every) or record["group"] == group


def estimated(
    model: str, usage: UsagePart, response_id: str | None, known: ModelInfo | None, group: str | None = None
) -> UsageRecord:
    """The record by list prices, as soon as the chat answered: of the model that answered (`known`
    is its entry), and the one requested when a routing rule served another."""
    now = datetime.datetime.now(datetime.timezone.utc)
    served = usage.get("servedModel")
    pricing = known.pricing if known is not None else None
    return {
        "id": response_id if response_id and len(response_id) <= MAX_ID else uuid.uuid4().hex,
        "time": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "model": served or model,
        "requestedModel": model if served else None,
        "provider": None,
        "inputTokens": usage["inputTokens"],
        "outputTokens": usage["outputTokens"],
        "cachedTokens": usage["cachedTokens"],
        "cacheWriteTokens": usage["cacheWriteTokens"],
        "reasoningTokens": usage["reasoningTokens"],
        # a cost past the bound is unknown here as in the history: the status bar shows what is kept
        "cost": bounded_usd(usage_cost(usage, pricing)),
        "cacheSaved": bounded_saving(cache_saved(usage, pricing)),
        "billed": False,
        "byok": None,
        "group": group,
    }


def billed(
    record: UsageRecord, generation: Generation, usage: UsagePart | None = None, pricing: Pricing | None = None
) -> UsageRecord:
    """The record with what the gateway billed. The stream's token counts stand (they are what the
    status bar showed); the lookup fills counts the stream did not give, and the cache's saving is
    priced again with them (`usage`, `pricing`: the stream's usage and the model's list prices)."""
    written = record["cacheWriteTokens"] or generation.cache_write_tokens or 0
    cached = record["cachedTokens"] or generation.cached_tokens or 0
    saved = record["cacheSaved"]
    if usage is not None and (written, cached) != (record["cacheWriteTokens"], record["cachedTokens"]):
        saved = bounded_saving(cache_saved({**usage, "cachedTokens": cached, "cacheWriteTokens": written}, pricing))
    return {
        **record,
        "cacheSaved": saved,
        "provider": generation.provider,
        "byok": generation.byok,
        "cost": generation.cost if generation.cost is not None else record["cost"],
        "billed": generation.cost is not None,
        "inputTokens": record["inputTokens"] or generation.input_tokens or 0,
        "outputTokens": record["outputTokens"] or generation.output_tokens or 0,
        "cachedTokens": cached,
        "cacheWriteTokens": written,
        "reasoningTokens": record["reasoningTokens"] or generation.reasoning_tokens or 0,
    }
