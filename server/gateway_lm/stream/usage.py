"""The terminal response's usage → the `usage` part (cached and written ⊆ input, reasoning ⊆
output), the tier that served it and the generation id the gateway may name there, and the bounds of
a usage record (rfcs/0006-spend.md).

Each bound is one constant, applied where a value enters (the stream, a generation lookup, a row of
the shared database) and by the extension (extension/contract.ts carries them): what the status bar
shows is what the history keeps, the dashboard draws and the CSV exports.
"""

from __future__ import annotations

import math
from typing import Any

from ..messages import ServedTier, UsagePart

MAX_ID = 200  # characters of a response or generation id: what we send back in a lookup, and keep
MAX_PROVIDER = 100  # characters of a provider's name
MAX_TIME = 40  # characters of a record's time (ISO 8601; ours are 24)
MAX_TOKEN_COUNT = 1 << 40  # a count past it is no reading (and more than SQLite's INTEGER holds, near 2^63)
MAX_USD = 1_000_000_000.0  # USD: a cost, a balance or a total beyond a billion dollars is no reading


def bounded_usd(value: float | None) -> float | None:
    """A cost as a record holds it: finite, 0 … MAX_USD; anything else is unknown (None)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and 0 <= value <= MAX_USD else None


def bounded_saving(value: float | None) -> float | None:
    """What the prompt cache saved as a record holds it: finite, within ±MAX_USD (a first request's
    cache writes can cost more than nothing was read: a negative saving); else unknown (None)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and -MAX_USD <= value <= MAX_USD else None


def usage_from(raw: Any, served: ServedTier = "default") -> UsagePart | None:
    """`served`: the tier the response says served it (served_tier)."""
    if not isinstance(raw, dict):
        return None
    input_tokens = _int(raw.get("input_tokens"))
    output_tokens = _int(raw.get("output_tokens"))
    total = _int(raw.get("total_tokens")) or input_tokens + output_tokens
    input_details = raw.get("input_tokens_details")
    output_details = raw.get("output_tokens_details")
    cached = _int(input_details.get("cached_tokens")) if isinstance(input_details, dict) else 0
    # The gateway's Responses usage counts cache writes beside cache reads, both within input_tokens
    # (rfcs/0006, "Cache reads and writes"); a count past what input leaves is cut to it.
    written = _int(input_details.get("cache_write_tokens")) if isinstance(input_details, dict) else 0
    reasoning = _int(output_details.get("reasoning_tokens")) if isinstance(output_details, dict) else 0
    return {
        "type": "usage",
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": total,
        "cachedTokens": cached,
        "cacheWriteTokens": min(written, max(input_tokens - cached, 0)),
        "reasoningTokens": reasoning,
        "servedTier": served,
    }


# What a response may call the tier that served it, as the usage part names it: the gateway's
# unified values (`fast` is its alias of priority) and OpenAI's (`auto` and `scale` are standard).
_TIERS: dict[str, ServedTier] = {
    "default": "default",
    "standard": "default",
    "auto": "default",
    "scale": "default",
    "flex": "flex",
    "priority": "priority",
    "fast": "priority",
    "ultrafast": "ultrafast",
}


def served_tier(response: dict[str, Any]) -> ServedTier:
    """The service tier that served the response: `provider_metadata.gateway.serviceTier` (the
    gateway names it only for flex, priority and ultrafast), else an OpenAI-style top-level
    `service_tier`, else `default` (rfcs/0007, "Speed per request"). A value neither names is no
    reading, and reads as `default`: the gateway says nothing of the standard tier."""
    for outer in ("provider_metadata", "providerMetadata"):
        metadata = response.get(outer)
        gateway = metadata.get("gateway") if isinstance(metadata, dict) else None
        value = gateway.get("serviceTier") if isinstance(gateway, dict) else None
        if isinstance(value, str) and value.lower() in _TIERS:
            return _TIERS[value.lower()]
    value = response.get("service_tier")
    return _TIERS.get(value.lower(), "default") if isinstance(value, str) else "default"


def _int(value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT
    return value if ok else 0


def generation_id_from(response: dict[str, Any]) -> str | None:
    """The gateway's generation id when the response carries it in provider metadata, as the AI
    SDK's `providerMetadata.gateway.generationId` (either spelling); else None."""
    for outer, inner in (("providerMetadata", "generationId"), ("provider_metadata", "generation_id")):
        metadata = response.get(outer)
        gateway = metadata.get("gateway") if isinstance(metadata, dict) else None
        value = gateway.get(inner) if isinstance(gateway, dict) else None
        if isinstance(value, str) and 0 < len(value) <= MAX_ID:
            return value
    return None
