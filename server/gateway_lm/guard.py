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

from .errors import GatewayError, SpendData
from .models import PER_MILLION, Pricing
from .protocol import UsagePart
from .settings import Settings

EXPECTED_OUTPUT_TOKENS = 1000
# An approval covers the request it was given for, with room for the estimate to move a little
# between the refusal and the re-send (the same request counted twice gives the same number).
APPROVAL_SLACK = 1e-9


def request_estimate(input_tokens: int, pricing: Pricing, max_output_tokens: int) -> float | None:
    """USD, or None when the model has no input or output price (then there is no guard)."""
    if pricing.input is None or pricing.output is None:
        return None
    expected_output = min(max(max_output_tokens, 0), EXPECTED_OUTPUT_TOKENS)
    return (input_tokens * pricing.input + expected_output * pricing.output) / PER_MILLION


def usage_cost(usage: UsagePart, pricing: Pricing | None) -> float | None:
    """USD by list prices, as the status bar computes it (extension/status.ts): cached input at the
    cache-read price where there is one."""
    if pricing is None or pricing.input is None or pricing.output is None:
        return None
    cached = min(usage["cachedTokens"], usage["inputTokens"])
    fresh = usage["inputTokens"] - cached
    cache_price = pricing.cacheRead if pricing.cacheRead is not None else pricing.input
    return (fresh * pricing.input + cached * cache_price + usage["outputTokens"] * pricing.output) / PER_MILLION


def check(estimate: float, settings: Settings, spent_today: float, approved: float | None) -> None:
    """Raises the `spend_limit` error when the estimate passes a limit and was not approved."""
    if approved is not None and estimate <= approved + APPROVAL_SLACK:
        return
    limit = settings.maxRequestCost
    if limit is not None and estimate > limit:
        message = f"This request will cost about {usd(estimate)} (your limit is {usd(limit)})."
        raise _refusal(message, {"estimate": estimate, "limit": limit, "scope": "request", "spentToday": spent_today})
    limit = settings.maxDailyCost
    if limit is not None and spent_today + estimate > limit:
        message = (
            f"This request would bring today's spend to about {usd(spent_today + estimate)}"
            f" (your daily limit is {usd(limit)})."
        )
        raise _refusal(message, {"estimate": estimate, "limit": limit, "scope": "day", "spentToday": spent_today})


def usd(amount: float) -> str:
    """Cents where they matter, four places below a cent (as extension/status.ts writes it)."""
    if 0 < amount < 0.00005:
        return "<$0.0001"  # not "$0.0000" for a cost that is not nothing
    return f"${amount:.2f}" if amount >= 0.01 else f"${amount:.4f}"


def _refusal(message: str, data: SpendData) -> GatewayError:
    return GatewayError("spend_limit", message, spend=data)
