"""Prices: what a request is expected to cost before it is sent (the spend guard), and what a
finished one cost by the model's list prices (the estimate kept when the gateway's billed cost cannot
be read). rfcs/0006-spend.md.

The guard's estimate is input + expected output. Input: our token estimate of the request body
(calibrated per model, rfcs/0004), of which the part expected from the prompt cache at the cache-read
price and the rest at the cache-write price where the body asks for caching and the model has one,
else at the input price (`CacheKeys`: reads are expected only where an earlier request of the same
conversation, by its `prompt_cache_key`, wrote them within the cache's lifetime; otherwise none,
which errs on the side of asking). Output: min(the request's output limit,
EXPECTED_OUTPUT_TOKENS) × the output price. The output limit alone would make every request of a
model with a 128K output limit look like a dollar; most answers in an agent loop are a tool call
or a few paragraphs, well under 1,000 tokens, and a long answer is still bounded by the limit.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from ..gateway.errors import GatewayError, SpendData
from ..messages import UsagePart
from ..money import usd
from ..offer.catalogue import PER_MILLION, Pricing
from ..offer.speed import UNPRICED_TIERS, gateway_options_sent
from ..request.cache import MAX_CACHE_KEY
from ..settings import Settings

EXPECTED_OUTPUT_TOKENS = 1000
# How long a prompt-cache entry lives after its last use: the 5 minutes Anthropic's and the gateway's
# default `cache_ttl` give (rfcs/0006, "Cache reads and writes"); an earlier request older than this
# is expected to have left nothing to read.
CACHE_TTL_S = 300.0
MAX_CACHE_KEYS = 256  # conversations remembered for the estimate; the oldest is forgotten first
# An approval covers the request it was given for, with room for the estimate to move a little
# between the refusal and the re-send (the same request counted twice gives the same number).
APPROVAL_SLACK = 1e-9


def in_force(pricing: Pricing, input_tokens: int) -> Pricing:
    """The prices a request of `input_tokens` input tokens is billed at: the highest tier it reaches
    (the gateway bills a long context's every token at that tier's rates), else the base prices. The
    tier the user chose in the chat input bounds the input Copilot sends, so this is that tier's
    price whenever Copilot keeps to it (rfcs/0006, "Context tiers")."""
    reached = [t for t in pricing.tiers if t.fromInputTokens <= input_tokens]
    if not reached:
        return pricing
    tier = reached[-1]
    return Pricing(input=tier.input, output=tier.output, cacheRead=tier.cacheRead, cacheWrite=tier.cacheWrite)


def request_estimate(
    input_tokens: int, pricing: Pricing, max_output_tokens: int, cached: int = 0, writes: bool = False
) -> float | None:
    """USD, or None when the model has no input or output price (then there is no guard). `cached`:
    the input tokens expected from the prompt cache (CacheKeys), at the cache-read price; `writes`:
    the body asks for caching, so the rest is written to the cache, at the cache-write price where
    the model has one."""
    pricing = in_force(pricing, input_tokens)
    if pricing.input is None or pricing.output is None:
        return None
    reads = min(max(cached, 0), input_tokens)
    read_price = pricing.cacheRead if pricing.cacheRead is not None else pricing.input
    rest_price = pricing.cacheWrite if writes and pricing.cacheWrite is not None else pricing.input
    expected_output = min(max(max_output_tokens, 0), EXPECTED_OUTPUT_TOKENS)
    input_cost = reads * read_price + (input_tokens - reads) * rest_price
    return (input_cost + expected_output * pricing.output) / PER_MILLION


def _list_prices(usage: UsagePart, pricing: Pricing | None) -> Pricing | None:
    """The list prices a finished request is priced at: its context tier's; None when there are none,
    or when the tier that served it has none (priority, ultrafast: the catalogue lists no price for
    them; flex's is below the standard price, which bounds it; rfcs/0007, "Speed per request")."""
    if pricing is None or usage["servedTier"] in UNPRICED_TIERS:
        return None
    pricing = in_force(pricing, usage["inputTokens"])
    return pricing if pricing.input is not None and pricing.output is not None else None


def usage_cost(usage: UsagePart, pricing: Pricing | None) -> float | None:
    """USD by list prices, as the status bar computes it (extension/status.ts requestCost): input read
    from the prompt cache at the cache-read price, input written to it at the cache-write price (each
    at the input price where the model has none), the rest at the input price."""
    prices = _list_prices(usage, pricing)
    if prices is None:
        return None
    assert prices.input is not None and prices.output is not None, "checked by _list_prices"
    cached = min(usage["cachedTokens"], usage["inputTokens"])
    written = min(usage["cacheWriteTokens"], usage["inputTokens"] - cached)
    fresh = usage["inputTokens"] - cached - written
    read_price = prices.cacheRead if prices.cacheRead is not None else prices.input
    write_price = prices.cacheWrite if prices.cacheWrite is not None else prices.input
    input_cost = fresh * prices.input + cached * read_price + written * write_price
    return (input_cost + usage["outputTokens"] * prices.output) / PER_MILLION


def cache_saved(usage: UsagePart, pricing: Pricing | None) -> float | None:
    """USD the prompt cache saved on a request, by list prices (rfcs/0006, "What the cache saved"):
    what its cached input would have cost at the input price less what it cost at the cache-read
    price, less the premium its cache writes cost over the input price. Negative when the writes cost
    more than the reads saved (a first request). None where usage_cost has no price. The status bar
    computes the same (extension/status.ts cacheSaved)."""
    prices = _list_prices(usage, pricing)
    if prices is None:
        return None
    assert prices.input is not None, "checked by _list_prices"
    cached = min(usage["cachedTokens"], usage["inputTokens"])
    written = min(usage["cacheWriteTokens"], usage["inputTokens"] - cached)
    read_price = prices.cacheRead if prices.cacheRead is not None else prices.input
    write_price = prices.cacheWrite if prices.cacheWrite is not None else prices.input
    return (cached * (prices.input - read_price) - written * (write_price - prices.input)) / PER_MILLION


def cache_key(body: Mapping[str, Any]) -> str | None:
    """The request's `prompt_cache_key` (top-level, at most MAX_CACHE_KEY characters), or None."""
    key = body.get("prompt_cache_key")
    return key if isinstance(key, str) and 0 < len(key) <= MAX_CACHE_KEY else None


def asks_caching(body: Mapping[str, Any]) -> bool:
    """Whether the request asks the gateway to place cache breakpoints: `caching: "auto"` at the top
    level, where the gateway reads it, or in `providerOptions.gateway`, where older examples put it."""
    gateway = gateway_options_sent(body)
    return body.get("caching") == "auto" or (gateway is not None and gateway.get("caching") == "auto")


class CacheKeys:
    """What the guard expects a request to read from the prompt cache: per model and
    `prompt_cache_key`, the tokens the last answered request left in the cache (what it read plus
    what it wrote, as its usage says: a provider that cached nothing leaves nothing to expect) and
    when it was answered (the cache keeps a prefix CACHE_TTL_S after its last use). Bounded:
    MAX_CACHE_KEYS conversations, the least recently answered forgotten first."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen: OrderedDict[tuple[str, str], tuple[float, int]] = OrderedDict()

    def answered(self, model: str, body: Mapping[str, Any], cached_tokens: int) -> None:
        """A request of `body` answered, leaving `cached_tokens` of its input in the cache (read from
        it or written to it); none forgets the key: the next request is priced as if nothing is."""
        key = cache_key(body)
        if key is None:
            return
        if cached_tokens <= 0:
            self._seen.pop((model, key), None)
            return
        self._seen[(model, key)] = (self._clock(), cached_tokens)
        self._seen.move_to_end((model, key))
        while len(self._seen) > MAX_CACHE_KEYS:
            self._seen.popitem(last=False)

    def expected_reads(self, model: str, body: Mapping[str, Any], input_tokens: int) -> int:
        """The input tokens of a request of `body` expected from the cache: what the earlier request of
        its key left there within CACHE_TTL_S, at most this one's input; 0 without a key or such a
        request."""
        key = cache_key(body)
        seen = self._seen.get((model, key)) if key is not None else None
        if seen is None or self._clock() - seen[0] > CACHE_TTL_S:
            return 0
        return min(seen[1], max(input_tokens, 0))


def check(
    estimate: float,
    settings: Settings,
    spent_today: float | None,
    approved_cost: float | None,
    approved_day: bool,
    why_unread: str | None = None,
) -> None:
    """Raises the `spend_limit` error when the estimate passes a limit the user did not approve it
    past. An approved cost covers the request limit only: the day limit bounds the total whatever was
    approved before, and today's spend that cannot be read (None) asks rather than passes."""
    limit = settings.maxRequestCost
    covered = approved_cost is not None and estimate <= approved_cost + APPROVAL_SLACK
    if limit is not None and estimate > limit and not covered:
        message = f"This request will cost about {usd(estimate)} (your limit is {usd(limit)})."
        raise _refusal(message, {"estimate": estimate, "limit": limit, "scope": "request", "spentToday": spent_today})
    limit = settings.maxDailyCost
    if limit is None or approved_day:
        return
    if spent_today is None:
        why = f" ({why_unread})" if why_unread else ""
        message = (
            f"Today's spend cannot be read{why}, so your daily limit of {usd(limit)} cannot be checked."
            f" This request will cost about {usd(estimate)}."
        )
        raise _refusal(message, {"estimate": estimate, "limit": limit, "scope": "day", "spentToday": None})
    if spent_today + estimate > limit:
        message = (
            f"This request would bring today's spend to about {usd(spent_today + estimate)}"
            f" (your daily limit is {usd(limit)})."
        )
        raise _refusal(message, {"estimate": estimate, "limit": limit, "scope": "day", "spentToday": spent_today})


def unpriced_refusal(model: str, settings: Settings, tier: str | None = None) -> GatewayError:
    """A limit is set and the model list gives this model no price, or none for the service tier the
    request asks for (`tier`): its cost cannot be checked."""
    limit = settings.maxRequestCost if settings.maxRequestCost is not None else settings.maxDailyCost
    assert limit is not None, "the guard runs only when a limit is set"
    unpriced = f"{model} no price" if tier is None else f"no price for {model}'s {tier} tier"
    message = (
        f"The model list gives {unpriced}, so this request's cost cannot be checked against"
        f" your spend limit of {usd(limit)}."
    )
    return _refusal(message, {"estimate": None, "limit": limit, "scope": "unpriced", "spentToday": None})


def _refusal(message: str, data: SpendData) -> GatewayError:
    return GatewayError("spend_limit", message, spend=data)
