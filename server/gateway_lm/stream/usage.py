"""The terminal response's usage → the `usage` part (cached ⊆ input, reasoning ⊆ output), the
generation id the gateway may name there, and the bounds of a usage record (rfcs/0006-spend.md).

Each bound is one constant, applied where a value enters (the stream, a generation lookup, a row of
the shared database) and by the extension (extension/contract.ts carries them): what the status bar
shows is what the history keeps, the dashboard draws and the CSV exports.
"""

from __future__ import annotations

import math
from typing import Any

from ..messages import UsagePart

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


def usage_from(raw: Any) -> UsagePart | None:
    if not isinstance(raw, dict):
        return None
    input_tokens = _int(raw.get("input_tokens"))
    output_tokens = _int(raw.get("output_tokens"))
    total = _int(raw.get("total_tokens")) or input_tokens + output_tokens
    input_details = raw.get("input_tokens_details")
    output_details = raw.get("output_tokens_details")
    cached = _int(input_details.get("cached_tokens")) if isinstance(input_details, dict) else 0
    reasoning = _int(output_details.get("reasoning_tokens")) if isinstance(output_details, dict) else 0
    return {
        "type": "usage",
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": total,
        "cachedTokens": cached,
        "reasoningTokens": reasoning,
    }


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
