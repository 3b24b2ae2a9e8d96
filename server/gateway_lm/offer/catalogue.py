"""The model catalogue: the gateway's `/models` entries → what the editor's picker needs.

Every entry is untrusted: a number that is not finite or not within its bounds is dropped (the field
takes its default), and an entry that still cannot be read is dropped, never the whole list.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..messages import MAX_MODEL_ID
from .contextsize import MIN_OPTION_TOKENS
from .effort import Efforts, efforts_for

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_OUTPUT = 16_384
MAX_TOKENS = 100_000_000  # bound of context windows and output limits: 50× today's largest window
MAX_PRICE = 1_000_000.0  # USD per million tokens; one dollar a token is already no real price
PER_MILLION = 1_000_000
FAST_SUFFIX = "-fast"  # the gateway's id of a model's fast tier (speed.py)
MAX_TIERS = 8  # price tiers of one model; the gateway lists two or three, more is not a price list
# The gateway's tiered prices (`input_tiers`: [{cost, min, max?}], a rate per token from `min` input
# tokens on) beside each flat price, and the field of Pricing each one prices.
FLAT_FIELDS = {"input": "input", "output": "output", "input_cache_read": "cacheRead", "input_cache_write": "cacheWrite"}
# One element of a `*_tiers` list: (its first input token, the first token past it or None, USD per
# million tokens).
Band = tuple[int, int | None, float]
TIER_FIELDS = {
    "input_tiers": "input",
    "output_tiers": "output",
    "input_cache_read_tiers": "cacheRead",
    "input_cache_write_tiers": "cacheWrite",
}
# What an id and a version may hold. VS Code draws a model's `id@version` in the Language Models
# editor's hover as trusted markdown, and the extension passes both as they are (an id is what a
# request names); so neither may hold markup: a link, an autolink, a reference definition, a line
# break. Every id a gateway lists is made of these (`anthropic/claude-sonnet-4.5`); a version that is
# not (`released` is a date or a timestamp) is replaced by the next candidate. Its twin is the
# extension's check of the list it saved (extension/saved.ts, isSafeId), which VS Code gets before
# the sidecar answers: the pattern crosses as a contract constant (contract.CONSTANTS).
SAFE_ID_PATTERN = "^[A-Za-z0-9._~:/@+-]+$"
SAFE_ID = re.compile(SAFE_ID_PATTERN)


class Capabilities(BaseModel):
    toolCalling: bool
    imageInput: bool


class PriceTier(BaseModel):
    """The prices of a request whose input reaches `fromInputTokens`: the gateway bills every token of
    such a request at these rates (long-context pricing, rfcs/0006 "Context tiers"). USD per million
    tokens; a price the tier does not change is the base price."""

    model_config = ConfigDict(allow_inf_nan=False)

    fromInputTokens: int
    input: float | None = None
    output: float | None = None
    cacheRead: float | None = None
    cacheWrite: float | None = None


class Pricing(BaseModel):
    """USD per million tokens; None where the gateway gives no price. The base prices are those of
    a request below the first tier; `tiers` (ascending, each above the last) those of longer ones."""

    model_config = ConfigDict(allow_inf_nan=False)

    input: float | None = None
    output: float | None = None
    cacheRead: float | None = None
    cacheWrite: float | None = None
    tiers: list[PriceTier] = []


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
    # The model this entry is the fast tier of (`<id>-fast` beside `<id>`, speed.py), else None: a
    # dearer way to a model, which Copilot's small tasks pass over (extension/smalltasks.ts).
    fastTierOf: str | None = None
    # How many of its prices and tiers the catalogue gave unreadable (dropped; logged once per list).
    unreadablePrices: int = Field(default=0, exclude=True)
    # A virtual model the user added by its id (virtual.py), and what the gateway did not say of it
    # ("window", "prices", "tools"): the tooltip names each, with the default it is counted with.
    virtual: bool = Field(default=False, exclude=True)
    unstated: list[str] = Field(default=[], exclude=True)


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
    pricing, dropped = pricing_from(raw.get("pricing"))
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
        pricing=pricing,
        tags=tags,
        ownedBy=_text(raw.get("owned_by")) or owner,
        description=_text(raw.get("description")),
        efforts=efforts_for(raw, model_id, reasoning),
        unreadablePrices=dropped,
    )


def input_budget(context_window: int, max_output: int, reservation: int) -> int:
    """Context window minus what we keep for the answer: the honest limit Copilot budgets against."""
    reserved = min(max(reservation, 0), max_output)
    return max(1, context_window - reserved)


def pricing_from(raw: Any) -> tuple[Pricing, int]:
    """The prices of a catalogue entry, and how many of its prices and tiers could not be read (each
    is dropped: that price is unknown, never NaN)."""
    if not isinstance(raw, dict):
        return Pricing(), 0
    dropped = 0
    base: dict[str, float | None] = {}
    tiers: dict[str, list[Band]] = {}
    for key, field in FLAT_FIELDS.items():
        base[field] = _per_million(raw.get(key))
        dropped += raw.get(key) is not None and base[field] is None
    for key, field in TIER_FIELDS.items():
        listed, bad = _tiers(raw.get(key))
        tiers[field], dropped = listed, dropped + bad
        if base[field] is None:  # no flat price: the tier in force from the first token is the base
            base[field] = _in_force(listed, 0)
    starts = sorted({start for listed in tiers.values() for start, _, _ in listed if start > 0})
    if len(starts) > MAX_TIERS:
        dropped, starts = dropped + len(starts) - MAX_TIERS, starts[:MAX_TIERS]
    above = [PriceTier(fromInputTokens=start, **_at(tiers, base, start)) for start in starts]
    # A tier that bills what the one below it bills is no tier to choose.
    distinct = [t for i, t in enumerate(above) if _rates(t) != (_rates(above[i - 1]) if i else tuple(base.values()))]
    return Pricing(**base, tiers=distinct), dropped


def _at(tiers: dict[str, list[Band]], base: dict[str, float | None], start: int) -> dict[str, float | None]:
    """Each price of a request of `start` input tokens: its field's tier in force there, else the base price."""
    prices = {field: _in_force(listed, start) for field, listed in tiers.items()}
    return {field: base[field] if price is None else price for field, price in prices.items()}


def _rates(tier: PriceTier) -> tuple[float | None, ...]:
    return (tier.input, tier.output, tier.cacheRead, tier.cacheWrite)


def _tiers(raw: Any) -> tuple[list[Band], int]:
    """A `*_tiers` list as (first input token, first token past it or None, USD per million), and
    how many of its elements could not be read."""
    if raw is None:
        return [], 0
    if not isinstance(raw, list) or len(raw) > 4 * MAX_TIERS:
        return [], 1
    listed: list[Band] = []
    for element in raw:
        start = _token_count(element.get("min")) if isinstance(element, dict) and element.get("min") != 0 else 0
        end = _token_count(element.get("max")) if isinstance(element, dict) else None
        price = _per_million(element.get("cost")) if isinstance(element, dict) else None
        if start is None or price is None or (end is not None and end <= start):
            return [], 1  # one bad bound and the others cannot be trusted to say where it ends
        listed.append((start, end, price))
    return listed, 0


def _in_force(tiers: list[Band], tokens: int) -> float | None:
    """The price of the tier that holds a request of `tokens` input tokens: the one with the highest
    start at or below it that has not ended."""
    holding = [(start, price) for start, end, price in tiers if start <= tokens and (end is None or tokens < end)]
    return max(holding)[1] if holding else None


def catalogue(raw_models: list[dict[str, Any]], output_reservation: int) -> list[ModelInfo]:
    models: list[ModelInfo] = []
    unreadable = 0
    unpriced: list[str] = []
    early: list[str] = []  # models with a tier that starts below any real prompt
    for raw in raw_models:
        try:
            model = model_from_gateway(raw, output_reservation)
        except (ValidationError, ValueError, TypeError, AttributeError):
            unreadable += 1
            continue
        if model is not None:
            models.append(model)
            if model.unreadablePrices:
                unpriced.append(model.id)
            if any(t.fromInputTokens - 1 < MIN_OPTION_TOKENS for t in model.pricing.tiers):
                early.append(model.id)
    if unreadable:
        log.warning("ignored %d catalogue entries that could not be read", unreadable)
    link_fast_tiers(models)
    if unpriced:  # one line for the list, not one per model: a catalogue is read every minute
        log.warning("dropped prices that could not be read from %d models (%s)", len(unpriced), ", ".join(unpriced[:5]))
    if early:
        log.warning(
            "%d models have a price tier that starts before %d input tokens, which every real request reaches;"
            " it prices requests, but no context size stops below it (%s)",
            len(early),
            MIN_OPTION_TOKENS,
            ", ".join(early[:5]),
        )
    return sorted(models, key=lambda m: (m.ownedBy, m.name.lower()))


def link_fast_tiers(models: list[ModelInfo]) -> None:
    """Gives every model whose fast tier the catalogue lists (`<id>-fast`) that tier's prices, and
    the tier's entry the model's id (speed.py: how a model's fast tier is known)."""
    by_id = {model.id: model for model in models}
    for model in models:
        tier = by_id.get(model.id + FAST_SUFFIX)
        if tier is not None and not model.id.endswith(FAST_SUFFIX):
            model.fast = tier.pricing
            tier.fastTierOf = model.id


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
