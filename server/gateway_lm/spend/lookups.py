"""The gateway's own numbers of money: `GET /v1/credits` and `GET /v1/generation?id=…`
(vercel.com/docs/ai-gateway/capabilities/usage; rfcs/0006-spend.md). Both answers are untrusted:
each field is read on its own, and one that is missing, of the wrong type, not finite or out of
bounds is unknown (None), never a failure.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from typing import Any

from typing_extensions import TypedDict

from ..gateway.client import GatewayClient
from ..gateway.errors import GatewayError
from ..stream.usage import MAX_PROVIDER, MAX_TOKEN_COUNT, MAX_USD

log = logging.getLogger(__name__)

# Seconds before each lookup: the gateway records a generation "shortly after" it completes; the
# first try comes after most have landed, the last 6 s after the answer. A 404 in between is "not
# yet". An id that is not the gateway's (`gen_…`) is tried once: it may be no generation at all.
LOOKUP_DELAYS = (0.4, 0.8, 1.6, 3.2)
QUIET_STATUSES = frozenset({401, 403, 404})  # a key that may not read credits: nothing to show
GENERATION_PREFIX = "gen_"


class Credits(TypedDict):
    """USD; both None when the key cannot read the team's credits."""

    balance: float | None
    totalUsed: float | None


@dataclass(frozen=True)
class Generation:
    """What the gateway billed for one generation."""

    cost: float | None
    provider: str | None
    byok: bool | None
    input_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    cached_tokens: int | None
    cache_write_tokens: int | None


async def read_credits(client: GatewayClient, api_key: str | None) -> Credits:
    try:
        payload = await client.get_json("/credits", api_key)
    except GatewayError as error:
        if error.status in QUIET_STATUSES:
            log.info("credits not readable with this key (HTTP %s)", error.status)
            return {"balance": None, "totalUsed": None}
        raise
    if not isinstance(payload, dict):
        payload = {}
    return {"balance": read_usd(payload.get("balance"), signed=True), "totalUsed": read_usd(payload.get("total_used"))}


async def look_up(
    client: GatewayClient, generation_id: str, api_key: str | None, delays: tuple[float, ...] = LOOKUP_DELAYS
) -> Generation | None:
    """The generation's billed record, retried while the gateway has none yet; None when it never
    came (or the key may not read it)."""
    tries = delays if generation_id.startswith(GENERATION_PREFIX) else delays[:1]
    for attempt, delay in enumerate(tries, 1):
        await asyncio.sleep(delay)
        try:
            payload = await client.get_json("/generation", api_key, {"id": generation_id})
        except GatewayError as error:
            if error.status in (401, 403):
                log.info("generation %s: the key may not read it (HTTP %s)", generation_id, error.status)
                return None
            log.debug("generation %s not there yet (try %d): %s", generation_id, attempt, error.kind)
            continue
        generation = generation_from(payload)
        if generation is not None:
            return generation
    log.info("generation %s: no billed record after %d tries; the estimate stands", generation_id, len(tries))
    return None


def generation_from(payload: Any) -> Generation | None:
    """`{"data": {...}}` → a Generation; None when there is no record in it."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, dict):
        return None
    provider = data.get("provider_name")
    byok = data.get("is_byok")
    return Generation(
        cost=read_usd(data.get("total_cost")),
        provider=provider[:MAX_PROVIDER] if isinstance(provider, str) and provider else None,
        byok=byok if isinstance(byok, bool) else None,
        input_tokens=_tokens(data.get("native_tokens_prompt")),
        output_tokens=_tokens(data.get("native_tokens_completion")),
        reasoning_tokens=_tokens(data.get("native_tokens_reasoning")),
        cached_tokens=_tokens(data.get("native_tokens_cached")),
        cache_write_tokens=_tokens(data.get("native_tokens_cache_creation")),
    )


def read_usd(value: Any, signed: bool = False) -> float | None:
    """A decimal string ("95.50") or a number → USD; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        amount = float(value)
    except (ValueError, OverflowError):
        return None
    low = -MAX_USD if signed else 0.0
    return amount if math.isfinite(amount) and low <= amount <= MAX_USD else None


def _tokens(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_TOKEN_COUNT:
        return None  # False for NaN
    return int(value)
