"""What the editor's model picker shows: tooltip and detail built from the catalogue, VS Code's own
price fields, and the model's controls in the chat input."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..money import per_million
from ..tokens.tokenizer import encoding_name_for
from . import speed
from .budget import advertised_window
from .catalogue import ModelInfo, PriceTier, Pricing
from .contextsize import MIN_OPTION_TOKENS, ContextOption, ContextSizeProperty, context_menu
from .effort import Effort, EffortProperty, menu
from .metrics import ModelMetrics
from .speed import SpeedProperty

# VS Code's price fields are in GitHub AI credits per million tokens (its Language Models editor
# heads the column "Cost (Credits per 1M Tokens)"); one credit is $0.01 (GitHub's billing docs), so
# a model here reads in the same money as Copilot's own beside it (rfcs/0003, "Prices VS Code shows").
CREDITS_PER_USD = 100
PriceCategory = Literal["low", "medium", "high", "very_high"]
# The badge ("Low cost" … "Very high cost") from the blended base price, USD per million tokens:
# three input tokens to one output token, the mix of an agent turn (long prompts, short answers).
# Below each bound, its category: mini/flash models are low, Sonnet-class medium, Opus-class high,
# the priciest very high.
PRICE_CATEGORIES: tuple[tuple[float, PriceCategory], ...] = ((1.0, "low"), (8.0, "medium"), (20.0, "high"))


class HostPricing(BaseModel):
    """VS Code's price fields on a model's information (`LanguageModelChatInformation`, its
    languageModelPricing proposal; the host copies them without checking proposals). Costs in
    credits per million tokens; a None field is left out (extension/provider.ts)."""

    model_config = ConfigDict(allow_inf_nan=False)

    pricing: str  # the label VS Code shows where it shows no numbers
    inputCost: float | None
    outputCost: float | None
    cacheCost: float | None
    cacheWriteCost: float | None
    # The highest tier's, where the gateway bills long inputs at other rates.
    longContextInputCost: float | None
    longContextOutputCost: float | None
    longContextCacheCost: float | None
    longContextCacheWriteCost: float | None
    priceCategory: PriceCategory | None


NO_TOOLS_NOTE = "This model does not support tools: it answers chat, and agent tools are withheld from its requests."
# A virtual model's words (virtual.py), where the gateway's answer about it leaves something out.
VIRTUAL_NOTE = "A virtual model: your team's saved gateway configuration (its model, routing and fallbacks)"
UNPRICED_NOTE = (
    "Prices unknown: the gateway does not say; the status bar shows what each request was billed,"
    " and with a spend limit set you are asked before a request is sent"
)
TOOLS_UNSTATED_NOTE = "Tool support unknown: the gateway does not say; agent tools are sent with its requests"


class ConfigurationProperties(BaseModel):
    """The model's controls in the chat input; each is left out of the wire where the model has none
    (effort.py, speed.py, contextsize.py)."""

    reasoningEffort: EffortProperty | None = Field(default=None, exclude_if=lambda menu: menu is None)
    speed: SpeedProperty | None = Field(default=None, exclude_if=lambda menu: menu is None)
    contextSize: ContextSizeProperty | None = Field(default=None, exclude_if=lambda menu: menu is None)


class ConfigurationSchema(BaseModel):
    """`LanguageModelChatInformation.configurationSchema`: per-model controls in the chat input.
    The user's choices come back in the request's `modelConfiguration`."""

    properties: ConfigurationProperties


class ModelEntry(ModelInfo):
    """One model of `gateway/models`: the catalogue's fields (real tokens), what the picker shows of
    it, and the window Copilot budgets with, in o200k tokens (budget.py)."""

    tooltip: str
    detail: str
    budgetFactor: float  # real tokens per o200k token that budgetInputTokens was computed with
    budgetInputTokens: int  # maxInputTokens / budgetFactor: what VS Code is told as maxInputTokens
    # The encoding gateway/countTokens counts this model's texts with: the extension keeps one memo
    # per tokenizer, shared by every model that has it (rfcs/0004-token-accounting.md).
    tokenizer: str
    # The reasoning-effort, speed and context-size menus beside the model in the chat input
    # (effort.py, speed.py, contextsize.py); None: no menu.
    configurationSchema: ConfigurationSchema | None
    # VS Code's price fields; None for a model without an input and an output price.
    hostPricing: HostPricing | None
    # What the picker warns of beside the model (VS Code's warningText, with a warning icon): only
    # what is true of it, that it takes no tools; None: nothing.
    warning: str | None
    # How fast and how reliable the gateway measured it (metrics.py); None: no measurement, or a
    # gateway without the endpoint. Arrives after the catalogue (chats.py, "the models' metrics").
    metrics: ModelMetrics | None = None


def picker_entry(
    model: ModelInfo,
    factor: float = 1.0,
    effort: Effort | None = None,
    fast: speed.Choice = "standard",
    metrics: ModelMetrics | None = None,
) -> ModelEntry:
    """`effort`, `fast`: the level and the speed or tier the settings ask for this model, which the
    menus preselect (speed.preselected); `metrics`: what the gateway measured of it, if anything."""
    return ModelEntry(
        **dict(model),
        tooltip=tooltip(model, factor, metrics),
        detail=detail(model),
        budgetFactor=factor,
        budgetInputTokens=advertised_window(model.maxInputTokens, factor),
        tokenizer=encoding_name_for(model.id),
        configurationSchema=_controls(
            menu(model.efforts, effort), speed.menu(model, fast), context_menu(context_options(model, factor))
        ),
        hostPricing=host_pricing(model.pricing),
        warning=None if model.capabilities.toolCalling else NO_TOOLS_NOTE,
        metrics=metrics,
    )


def _controls(
    effort: EffortProperty | None, fast: SpeedProperty | None, context: ContextSizeProperty | None
) -> ConfigurationSchema | None:
    """The menus a model has, or None when it has none."""
    if effort is None and fast is None and context is None:
        return None
    return ConfigurationSchema(
        properties=ConfigurationProperties(reasoningEffort=effort, speed=fast, contextSize=context)
    )


def host_pricing(pricing: Pricing) -> HostPricing | None:
    """VS Code's price fields for the catalogue's prices, in credits per million tokens."""
    if pricing.input is None or pricing.output is None:
        return None
    top = pricing.tiers[-1] if pricing.tiers else None
    return HostPricing(
        pricing=f"{per_million(pricing.input)} in / {per_million(pricing.output)} out per million tokens",
        inputCost=_credits(pricing.input),
        outputCost=_credits(pricing.output),
        cacheCost=_credits(pricing.cacheRead),
        cacheWriteCost=_credits(pricing.cacheWrite),
        longContextInputCost=_credits(top.input) if top else None,
        longContextOutputCost=_credits(top.output) if top else None,
        longContextCacheCost=_credits(top.cacheRead) if top else None,
        longContextCacheWriteCost=_credits(top.cacheWrite) if top else None,
        priceCategory=price_category(pricing.input, pricing.output),
    )


def price_category(input_price: float, output_price: float) -> PriceCategory:
    blended = (3 * input_price + output_price) / 4
    return next((category for bound, category in PRICE_CATEGORIES if blended < bound), "very_high")


def _credits(usd_per_million: float | None) -> float | None:
    # Rounded to the credit's ten-thousandth: a float product like 0.3 × 100 = 30.000000000000004
    # would show as such in VS Code's cells.
    return None if usd_per_million is None else round(usd_per_million * CREDITS_PER_USD, 4)


def context_options(model: ModelInfo, factor: float = 1.0) -> list[ContextOption]:
    """The context sizes the user may pay for: up to each tier's start (its rates apply from there),
    then the whole window; cheapest first. Values in Copilot's budget unit (budget.py); none for a
    model without a tier that starts inside its input limit and past MIN_OPTION_TOKENS (a tier
    before it bills every real request: it is what the first option is billed at)."""
    tiers = model.pricing.tiers
    starts = [t for t in tiers if MIN_OPTION_TOKENS <= t.fromInputTokens - 1 < model.maxInputTokens]
    if not starts:
        return []
    options: list[ContextOption] = []
    reached = [t for t in tiers if t.fromInputTokens - 1 < MIN_OPTION_TOKENS]
    below = _rates_text(reached[-1] if reached else model.pricing)
    for tier in starts:
        limit = tier.fromInputTokens - 1
        text = f"Up to {_k(limit)} input tokens, billed at {below}" if below else f"Up to {_k(limit)} input tokens"
        options.append(
            ContextOption(value=advertised_window(limit, factor), label=_k(limit), description=text, inputTokens=limit)
        )
        below = _rates_text(tier)
    top = starts[-1]
    whole = f"The whole window ({_k(model.maxInputTokens)} input tokens)"
    if below:
        whole += f": a request past {_k(top.fromInputTokens - 1)} input tokens is billed at {below}"
    value = advertised_window(model.maxInputTokens, factor)
    options.append(
        ContextOption(value=value, label=_k(model.contextWindow), description=whole, inputTokens=model.maxInputTokens)
    )
    # Distinct and rising: two tiers a token apart would read as one once divided by the factor.
    return [o for i, o in enumerate(options) if i == 0 or o.value > options[i - 1].value]


def _rates_text(prices: Pricing | PriceTier) -> str:
    if prices.input is None or prices.output is None:
        return ""
    return f"{per_million(prices.input)} in / {per_million(prices.output)} out per million tokens"


def tooltip(model: ModelInfo, factor: float = 1.0, metrics: ModelMetrics | None = None) -> str:
    lines = [f"{model.name} ({model.id}) by {model.ownedBy}"]
    if model.virtual:
        lines.append(VIRTUAL_NOTE)
    if "window" in model.unstated:
        lines.append(
            f"Context window unknown: the gateway does not say; counted as {_k(model.contextWindow)} tokens,"
            f" up to {_k(model.maxOutputTokens)} out"
        )
    else:
        lines.append(f"Context {_k(model.contextWindow)} tokens, up to {_k(model.maxOutputTokens)} out")
    if abs(factor - 1) >= 0.005:  # the real numbers above; how Copilot's o200k budget relates to them
        lines.append(
            f"Its tokenizer counts {factor:.2f}× what o200k counts: {_k(model.maxInputTokens)} input tokens"
            f" are {_k(advertised_window(model.maxInputTokens, factor))} to Copilot's budget"
        )
    price = _prices(model)
    if price:
        lines.append(price)
    elif "prices" in model.unstated:
        lines.append(UNPRICED_NOTE)
    if "tools" in model.unstated:
        lines.append(TOOLS_UNSTATED_NOTE)
    if metrics is not None and metrics.summary:
        via = f", {metrics.provider}" if metrics.provider else ""
        lines.append(f"{metrics.summary} (the gateway's last hour{via})")
    features = [name for name, on in (("vision", model.capabilities.imageInput), ("reasoning", model.reasoning)) if on]
    if features:
        lines.append("Supports " + " and ".join(features))
    if not model.capabilities.toolCalling:
        lines.append(NO_TOOLS_NOTE)
    return "\n".join(lines)


def detail(model: ModelInfo) -> str:
    parts = ["virtual"] if model.virtual else []
    parts.append("window unknown" if "window" in model.unstated else _k(model.contextWindow))
    if model.pricing.input is not None and model.pricing.output is not None:
        parts.append(f"{per_million(model.pricing.input)}/{per_million(model.pricing.output)}")
    if not model.capabilities.toolCalling:
        parts.append("no tools")
    return " · ".join(parts)


def _prices(model: ModelInfo) -> str:
    pricing = model.pricing
    if pricing.input is None or pricing.output is None:
        return ""
    text = f"{per_million(pricing.input)} in / {per_million(pricing.output)} out per million tokens"
    if pricing.cacheRead is not None:
        text += f", cached input {per_million(pricing.cacheRead)}"
    for tier in pricing.tiers:
        rates = _rates_text(tier)
        if rates:
            text += f"\nPast {_k(tier.fromInputTokens - 1)} input tokens, the whole request: {rates}"
    return text


def _k(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.3g}M"
    return f"{round(tokens / 1000)}K" if tokens >= 1000 else str(tokens)
