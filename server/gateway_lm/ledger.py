"""Spend around each chat: the guard before it is sent, its usage record and billed cost after it
answered; and the methods `gateway/credits` and `gateway/usage` (rfcs/0006-spend.md).

Nothing here is on the answer's path but the guard, which runs only when a limit is set. The record
is written, the generation looked up and `gateway/billed` sent in the background after the chat's
result has left; a failure there costs a log line, never the chat.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import math
import sqlite3
import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from .client import GatewayClient
from .guard import check, request_estimate, usage_cost
from .history import DEFAULT_LIMIT, MAX_LIMIT, UsageRecord, UsageStore
from .models import ModelInfo, Pricing
from .params import ChatParams, validated
from .pipeline import ChatOutcome
from .protocol import UsagePart
from .settings import Settings
from .spend import Credits, Generation, look_up, read_credits
from .tokens import count_request
from .usage import MAX_ID

log = logging.getLogger("gateway_lm.ledger")
_T = TypeVar("_T")


class CreditsParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    apiKey: str | None = None


class UsageParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    since: datetime.date | None = None  # UTC days, both ends included
    until: datetime.date | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT


class UsageResult(TypedDict):
    records: list[UsageRecord]  # newest first
    dayTotal: float  # USD spent today (UTC) by every window


class BilledNotification(TypedDict):
    """Sent once per chat, after its result: the billed record, or the estimate when the lookup gave up."""

    requestId: str | int
    record: UsageRecord


class Ledger:
    def __init__(self, client: Callable[[], GatewayClient], notify: Callable[[BilledNotification], None]) -> None:
        self._client = client
        self._notify = notify
        self.settings = Settings()
        self.store: UsageStore | None = None
        self._unpriced: set[str] = set()  # models the guard said it cannot price, once each

    def apply(self, settings: Settings) -> None:
        if settings.stateDir != self.settings.stateDir:
            if self.store is not None:
                self.store.close()
            self.store = UsageStore.open(settings.stateDir, settings.usageRetentionDays)
        elif self.store is not None:
            self.store.retain(settings.usageRetentionDays)
        self.settings = settings

    # ---- before a chat ----

    async def guard(self, request: ChatParams, body: dict[str, Any], model: ModelInfo | None, factor: float) -> None:
        """Raises `spend_limit` when the estimate of `body` (the request as it will be sent: translated
        and fitted, pipeline.prepare) passes a limit the user set."""
        settings = self.settings
        if settings.maxRequestCost is None and settings.maxDailyCost is None:
            return
        pricing = model.pricing if model is not None else Pricing()
        max_output = settings.maxOutputTokens or (model.maxOutputTokens if model is not None else 0)
        if request_estimate(0, pricing, max_output) is None:
            if request.model not in self._unpriced:
                self._unpriced.add(request.model)
                log.info("%s has no price in the model list: the spend limits do not apply to it", request.model)
            return
        tokens = math.ceil(await asyncio.to_thread(count_request, body, request.model) * factor)
        estimate = request_estimate(tokens, pricing, max_output) or 0.0
        spent = await self.spent_today() if settings.maxDailyCost is not None else 0.0
        check(estimate, settings, spent, request.approvedCost)

    async def spent_today(self) -> float:
        total = await self._in_thread(lambda store: store.day_total())
        return total or 0.0

    # ---- after a chat ----

    async def settle(
        self, request_id: str | int, model: str, outcome: ChatOutcome, known: ModelInfo | None, api_key: str | None
    ) -> None:
        """Records the chat's usage at once (the estimate), then its billed cost when the gateway has it."""
        if outcome.usage is None:
            return  # no answer to account for: failed, cancelled, or a gateway that reports no usage
        try:
            record = estimated(model, outcome.usage, outcome.response_id, known)
            from_response = record["id"] if record["id"] == outcome.response_id else None  # not our uuid
            await self._settle(request_id, record, outcome.generation_id or from_response, api_key)
        except Exception as error:  # a background task: nobody else would hear of it
            log.warning("the usage of chat %s was not recorded: %s: %s", request_id, type(error).__name__, error)

    async def _settle(
        self, request_id: str | int, record: UsageRecord, lookup_id: str | None, api_key: str | None
    ) -> None:
        key = uuid.uuid4().hex  # the row's, so the billed record replaces this estimate
        await self._put(key, record)
        generation = await look_up(self._client(), lookup_id, api_key) if lookup_id else None
        if generation is not None:
            record = billed(record, generation)
            await self._put(key, record)
        self._notify({"requestId": request_id, "record": record})

    # ---- methods ----

    async def credits(self, params: object) -> Credits:
        request = validated(CreditsParams, params)
        return await read_credits(self._client(), request.apiKey)

    async def usage(self, params: object) -> UsageResult:
        request = validated(UsageParams, params)
        since = request.since.isoformat() if request.since else None
        until = request.until.isoformat() if request.until else None
        records = await self._in_thread(lambda store: store.records(since, until, request.limit))
        return {"records": records or [], "dayTotal": await self.spent_today()}

    # ---- the store, from a worker thread ----

    async def _put(self, key: str, record: UsageRecord) -> None:
        await self._in_thread(lambda store: store.put(key, record))

    async def _in_thread(self, work: Callable[[UsageStore], _T]) -> _T | None:
        store = self.store
        if store is None:
            return None
        try:
            return await asyncio.to_thread(work, store)
        except sqlite3.Error as error:  # busy past the timeout, a full disk, a damaged file
            log.warning("usage history: %s", error)
            return None


def estimated(model: str, usage: UsagePart, response_id: str | None, known: ModelInfo | None) -> UsageRecord:
    """The record by list prices, as soon as the chat answered."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return {
        "id": response_id if response_id and len(response_id) <= MAX_ID else uuid.uuid4().hex,
        "time": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "model": model,
        "provider": None,
        "inputTokens": usage["inputTokens"],
        "outputTokens": usage["outputTokens"],
        "cachedTokens": usage["cachedTokens"],
        "cacheWriteTokens": 0,
        "reasoningTokens": usage["reasoningTokens"],
        "cost": usage_cost(usage, known.pricing if known is not None else None),
        "billed": False,
        "byok": None,
    }


def billed(record: UsageRecord, generation: Generation) -> UsageRecord:
    """The record with what the gateway billed. The stream's token counts stand (they are what the
    status bar showed); the lookup adds cache writes and fills counts the stream did not give."""
    return {
        **record,
        "provider": generation.provider,
        "byok": generation.byok,
        "cost": generation.cost if generation.cost is not None else record["cost"],
        "billed": generation.cost is not None,
        "inputTokens": record["inputTokens"] or generation.input_tokens or 0,
        "outputTokens": record["outputTokens"] or generation.output_tokens or 0,
        "cachedTokens": record["cachedTokens"] or generation.cached_tokens or 0,
        "cacheWriteTokens": generation.cache_write_tokens or 0,
        "reasoningTokens": record["reasoningTokens"] or generation.reasoning_tokens or 0,
    }
