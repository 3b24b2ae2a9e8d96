"""The terminal response's usage → the `usage` part (cached ⊆ input, reasoning ⊆ output), and the
generation id the gateway may name there (rfcs/0006-spend.md)."""

from __future__ import annotations

from typing import Any

from .protocol import UsagePart

MAX_ID = 200  # characters of an id we send back in a lookup


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
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


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
