"""Prices: what a request is expected to cost before it is sent (the spend guard), and what a
finished one cost by the model's list prices (the estimate kept when the gateway's billed cost cannot
be read). rfcs/0006-spend.md.

The guard's estimate is input + expected output. Input: our token estimate of the request body
(calibrated per model, rfcs/0004) × the input price; cached input is not known in advance, so it
is priced in full, which errs on the side of asking. Output: min(the request's output limit,
EXPECTED_OUTPUT_TOKENS) × the output price. The output limit alone would make every request of a
model with a 128K output limit look like a dollar; most answers in an agent loop are a tool call
or a few paragraphs, well under 1,000 tokens, and a long answer is still bounded by the limit.
"""

from __future__ import annotations

from ..gateway.errors import GatewayError, SpendData
from ..messages import UsagePart
from ..money import usd
from ..offer.catalogue import PER_MILLION, Pricing
from ..settings import Settings

EXPECTED_OUTPUT_TOKENS = 1000
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


def request_estimate(input_tokens: int, pricing: Pricing, max_output_tokens: int) -> float | None:
    """USD, or None when the model has no input or output price (then there is no guard)."""
    pricing = in_force(pricing, input_tokens)
    if pricing.input is None or pricing.output is None:
        return None
    expected_output = min(max(max_output_tokens, 0), EXPECTED_OUTPUT_TOKENS)
    return (input_tokens * pricing.input + expected_output * pricing.output) / PER_MILLION


def usage_cost(usage: UsagePart, pricing: Pricing | None) -> float | None:
    """USD by list prices, as the status bar computes it (extension/status.ts): cached input at the
    cache-read price where there is one."""
    if pricing is None:
        return None
    pricing = in_force(pricing, usage["inputTokens"])
    if pricing.input is None or pricing.output is None:
        return None
    cached = min(usage["cachedTokens"], usage["inputTokens"])
    fresh = usage["inputTokens"] - cached
    cache_price = pricing.cacheRead if pricing.cacheRead is not None else pricing.input
    return (fresh * pricing.input + cached * cache_price + usage["outputTokens"] * pricing.output) / PER_MILLION


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


def unpriced_refusal(model: str, settings: Settings) -> GatewayError:
    """A limit is set and the model list gives this model no price: its cost cannot be checked."""
    limit = settings.maxRequestCost if settings.maxRequestCost is not None else settings.maxDailyCost
    assert limit is not None, "the guard runs only when a limit is set"
    message = (
        f"The model list gives {model} no price, so this request's cost cannot be checked against"
        f" your spend limit of {usd(limit)}."
    )
    return _refusal(message, {"estimate": None, "limit": limit, "scope": "unpriced", "spentToday": None})


def _refusal(message: str, data: SpendData) -> GatewayError:
    return GatewayError("spend_limit", message, spend=data)
