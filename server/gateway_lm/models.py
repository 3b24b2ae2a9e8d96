"""The model catalogue: the gateway's `/models` entries → what the editor's picker needs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_OUTPUT = 16_384
PER_MILLION = 1_000_000


class Capabilities(BaseModel):
    toolCalling: bool
    imageInput: bool


class Pricing(BaseModel):
    """USD per million tokens; None where the gateway gives no price."""

    input: float | None = None
    output: float | None = None
    cacheRead: float | None = None
    cacheWrite: float | None = None


class ModelInfo(BaseModel):
    id: str
    name: str
    family: str
    version: str
    contextWindow: int
    maxInputTokens: int
    maxOutputTokens: int
    capabilities: Capabilities
    reasoning: bool
    pricing: Pricing
    tags: list[str]
    ownedBy: str
    description: str = ""


def model_from_gateway(raw: dict[str, Any], output_reservation: int) -> ModelInfo | None:
    model_id = raw.get("id")
    if not isinstance(model_id, str) or not model_id:
        return None
    if raw.get("type", "language") != "language":
        return None
    tags = [t for t in raw.get("tags") or [] if isinstance(t, str)]
    context = _positive_int(raw.get("context_window")) or DEFAULT_CONTEXT_WINDOW
    max_output = min(_positive_int(raw.get("max_tokens")) or DEFAULT_MAX_OUTPUT, context)
    owner, _, short = model_id.partition("/")
    return ModelInfo(
        id=model_id,
        name=str(raw.get("name") or model_id),
        family=short or model_id,
        version=str(raw.get("released") or raw.get("created") or model_id),
        contextWindow=context,
        maxInputTokens=input_budget(context, max_output, output_reservation),
        maxOutputTokens=max_output,
        capabilities=Capabilities(toolCalling="tool-use" in tags, imageInput="vision" in tags),
        reasoning="reasoning" in tags or bool(raw.get("reasoning_options")),
        pricing=pricing_from(raw.get("pricing")),
        tags=tags,
        ownedBy=str(raw.get("owned_by") or owner),
        description=str(raw.get("description") or ""),
    )


def input_budget(context_window: int, max_output: int, reservation: int) -> int:
    """Context window minus what we keep for the answer: the honest limit Copilot budgets against."""
    reserved = min(max(reservation, 0), max_output)
    return max(1, context_window - reserved)


def pricing_from(raw: Any) -> Pricing:
    if not isinstance(raw, dict):
        return Pricing()
    return Pricing(
        input=_per_million(raw.get("input")),
        output=_per_million(raw.get("output")),
        cacheRead=_per_million(raw.get("input_cache_read")),
        cacheWrite=_per_million(raw.get("input_cache_write")),
    )


def catalogue(raw_models: list[dict[str, Any]], output_reservation: int) -> list[ModelInfo]:
    models = [model_from_gateway(raw, output_reservation) for raw in raw_models]
    return sorted((m for m in models if m is not None), key=lambda m: (m.ownedBy, m.name.lower()))


def _per_million(value: Any) -> float | None:
    # Prices are decimal strings per token; tiered prices (lists) take the first tier.
    if isinstance(value, list) and value:
        value = value[0].get("price") if isinstance(value[0], dict) else value[0]
    try:
        return round(float(value) * PER_MILLION, 6)
    except (TypeError, ValueError):
        return None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value > 0:
        return int(value)
    return None
