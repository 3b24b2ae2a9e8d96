"""What the editor's model picker shows: tooltip and detail built from the catalogue."""

from __future__ import annotations

from . import speed
from .budget import advertised_window
from .catalogue import ModelInfo
from .effort import ConfigurationSchema, Effort, menu
from .spend.prices import per_million
from .tokenizer import encoding_name_for

NO_TOOLS_NOTE = "This model does not support tools: it answers chat, and agent tools are withheld from its requests."


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
    # The reasoning-effort and speed menus beside the model in the chat input (effort.py, speed.py);
    # None: no menu.
    configurationSchema: ConfigurationSchema | None
    # What the picker warns of beside the model (VS Code's warningText, with a warning icon): only
    # what is true of it, that it takes no tools; None: nothing.
    warning: str | None


def picker_entry(
    model: ModelInfo, factor: float = 1.0, effort: Effort | None = None, fast: speed.Speed | None = None
) -> ModelEntry:
    """`effort`, `fast`: the level and the speed the settings ask for this model, which the menus
    preselect."""
    return ModelEntry(
        **dict(model),
        tooltip=tooltip(model, factor),
        detail=detail(model),
        budgetFactor=factor,
        budgetInputTokens=advertised_window(model.maxInputTokens, factor),
        tokenizer=encoding_name_for(model.id),
        configurationSchema=menu(model.efforts, effort, speed.menu(model, fast)),
        warning=None if model.capabilities.toolCalling else NO_TOOLS_NOTE,
    )


def tooltip(model: ModelInfo, factor: float = 1.0) -> str:
    lines = [
        f"{model.name} ({model.id}) by {model.ownedBy}",
        f"Context {_k(model.contextWindow)} tokens, up to {_k(model.maxOutputTokens)} out",
    ]
    if abs(factor - 1) >= 0.005:  # the real numbers above; how Copilot's o200k budget relates to them
        lines.append(
            f"Its tokenizer counts {factor:.2f}× what o200k counts: {_k(model.maxInputTokens)} input tokens"
            f" are {_k(advertised_window(model.maxInputTokens, factor))} to Copilot's budget"
        )
    price = _prices(model)
    if price:
        lines.append(price)
    features = [name for name, on in (("vision", model.capabilities.imageInput), ("reasoning", model.reasoning)) if on]
    if features:
        lines.append("Supports " + " and ".join(features))
    if not model.capabilities.toolCalling:
        lines.append(NO_TOOLS_NOTE)
    return "\n".join(lines)


def detail(model: ModelInfo) -> str:
    parts = [_k(model.contextWindow)]
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
    return text


def _k(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.3g}M"
    return f"{round(tokens / 1000)}K" if tokens >= 1000 else str(tokens)
