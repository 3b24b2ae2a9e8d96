"""The model catalogue: the gateway's `/models` entries → what the editor's picker needs.

Every entry is untrusted: a number that is not finite or not within its bounds is dropped (the field
takes its default), and an entry that still cannot be read is dropped, never the whole list.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .effort import Efforts, efforts_for
from .messages import MAX_MODEL_ID
from .speed import link_fast_tiers

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_OUTPUT = 16_384
MAX_TOKENS = 100_000_000  # bound of context windows and output limits: 50× today's largest window
MAX_PRICE = 1_000_000.0  # USD per million tokens; one dollar a token is already no real price
PER_MILLION = 1_000_000
# What an id and a version may hold. VS Code draws a model's `id@version` in the Language Models
# editor's hover as trusted markdown, and the extension passes both as they are (an id is what a
# request names); so neither may hold markup: a link, an autolink, a reference definition, a line
# break. Every id a gateway lists is made of these (`anthropic/claude-sonnet-4.5`); a version that is
# not (`released` is a date or a timestamp) is replaced by the next candidate.
SAFE_ID = re.compile(r"[A-Za-z0-9._~:/@+-]+")


class Capabilities(BaseModel):
    toolCalling: bool
    imageInput: bool


class Pricing(BaseModel):
    """USD per million tokens; None where the gateway gives no price."""

    model_config = ConfigDict(allow_inf_nan=False)

    input: float | None = None
    output: float | None = None
    cacheRead: float | None = None
    cacheWrite: float | None = None


class ModelInfo(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)
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
    # The reasoning efforts it accepts (None: it does not reason); the extension gets the menu made of
    # them (picker.ModelEntry.configurationSchema), not these.
    efforts: Efforts | None = Field(default=None, exclude=True)
    # The prices of its fast tier, when the catalogue lists one (`<id>-fast`, speed.py); None: none.
    fast: Pricing | None = Field(default=None, exclude=True)


def model_from_gateway(raw: dict[str, Any], output_reservation: int) -> ModelInfo | None:
    model_id = raw.get("id")
    if not isinstance(model_id, str) or not model_id:
        return None
    if len(model_id) > MAX_MODEL_ID:  # no request could name it, no record could hold it
        raise ValueError("the model id is too long")
    if not SAFE_ID.fullmatch(model_id):  # no id holds markup or spaces; shown as text, it could be a link
        raise ValueError("the model id holds characters no model id has")
    if raw.get("type", "language") != "language":
        return None
    raw_tags = raw.get("tags")
    tags = [t for t in raw_tags if isinstance(t, str)] if isinstance(raw_tags, list) else []
    context = _token_count(raw.get("context_window")) or DEFAULT_CONTEXT_WINDOW
    max_output = min(_token_count(raw.get("max_tokens")) or DEFAULT_MAX_OUTPUT, context)
    owner, _, short = model_id.partition("/")
    reasoning = "reasoning" in tags or bool(raw.get("reasoning_options"))
    return ModelInfo(
        id=model_id,
        name=_text(raw.get("name")) or model_id,
        family=short or model_id,
        version=_version(raw.get("released")) or _version(raw.get("created")) or model_id,
        contextWindow=context,
        maxInputTokens=input_budget(context, max_output, output_reservation),
        maxOutputTokens=max_output,
        capabilities=Capabilities(toolCalling="tool-use" in tags, imageInput="vision" in tags),
        reasoning=reasoning,
        pricing=pricing_from(raw.get("pricing")),
        tags=tags,
        ownedBy=_text(raw.get("owned_by")) or owner,
        description=_text(raw.get("description")),
        efforts=efforts_for(raw, model_id, reasoning),
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
    models: list[ModelInfo] = []
    unreadable = 0
    for raw in raw_models:
        try:
            model = model_from_gateway(raw, output_reservation)
        except (ValidationError, ValueError, TypeError, AttributeError):
            unreadable += 1
            continue
        if model is not None:
            models.append(model)
    if unreadable:
        log.warning("ignored %d catalogue entries that could not be read", unreadable)
    link_fast_tiers(models)
    return sorted(models, key=lambda m: (m.ownedBy, m.name.lower()))


def _per_million(value: Any) -> float | None:
    # Prices are decimal strings per token; tiered prices (lists) take the first tier.
    if isinstance(value, list) and value:
        value = value[0].get("price") if isinstance(value[0], dict) else value[0]
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return None
    try:
        price = round(float(value) * PER_MILLION, 6)
    except (ValueError, OverflowError):
        return None
    return price if 0 <= price <= MAX_PRICE else None  # False for NaN


def _token_count(value: Any) -> int | None:
    """A window or output limit: a number in [1, MAX_TOKENS], else None (the default applies)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not 1 <= value <= MAX_TOKENS:  # False for NaN
        return None
    return int(value)


def _version(value: Any) -> str:
    text = _text(value)
    return text if len(text) <= 64 and SAFE_ID.fullmatch(text) else ""


def _text(value: Any) -> str:
    # A number (`created` is a timestamp) reads as text; an object or a list is not a name.
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) and value else ""
