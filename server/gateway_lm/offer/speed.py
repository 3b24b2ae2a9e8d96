"""Speed per request: the gateway's fast mode and the providers' service tiers
(rfcs/0007-network-and-options.md, "Speed per request").

Fast mode: the gateway serves a model's faster, dearer tier when a request sets
`providerOptions.gateway.speed` to "fast", and falls back to standard speed where there is none
(vercel.com/docs/ai-gateway, "Fast Mode"; changelog "AI Gateway adds unified fast mode support",
2026-07-29). The same tier has its own id, `<model>-fast`, and that id is how the catalogue tells it:
`/v1/models` has no field saying a model has a fast tier, but it lists the fast id beside the model,
with the fast tier's own prices. So a model has a fast tier here when the catalogue lists `<id>-fast`,
and what a fast request is estimated at is that entry's price.

Service tiers (the gateway's service-tiers page, 2026-09-10): `flex` and `priority` for OpenAI,
Google AI Studio and Vertex models, sent as `providerOptions.gateway.serviceTier`; OpenAI's
`ultrafast` as a top-level `service_tier` (changelog 2026-10-08, for the models in ULTRAFAST_MODELS).
The catalogue says neither which models take them nor what they cost, so the docs' providers say
which do, and no tier is given a price the catalogue does not list: flex, "lower cost", is bounded by
the standard price; priority and ultrafast have no price here (the spend guard asks).

Here:
- the menu Copilot shows beside the model in the chat input (beside effort's), with the prices;
- what a request carries: the user's choice in that menu over the `speed` of the model's
  `vercelAiGateway.modelOptions` and the `routing.serviceTier` setting (both application-scoped: a
  workspace cannot set them); never "fast" for a model the catalogue lists without a fast tier, nor a
  tier to a model whose provider takes none;
- the price of what is sent, for the estimate and the spend guard.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

from ..messages import ServedTier
from ..money import per_million
from .catalogue import FAST_SUFFIX, ModelInfo, Pricing

log = logging.getLogger(__name__)

Speed = Literal["standard", "fast"]  # what `modelOptions.speed` may ask
SPEEDS: tuple[Speed, ...] = ("standard", "fast")
Tier = Literal["flex", "priority", "ultrafast"]  # a service tier a request may ask for
# What the menu offers, in its order: a speed or a service tier.
Choice = Literal["standard", "fast", "flex", "priority", "ultrafast"]
CHOICES: tuple[Choice, ...] = ("standard", "fast", "flex", "priority", "ultrafast")
LABELS: dict[Choice, str] = {
    "standard": "Standard",
    "fast": "Fast",
    "flex": "Flex",
    "priority": "Priority",
    "ultrafast": "Ultrafast",
}
# The providers whose models take flex and priority (the service-tiers page, 2026-09-10: OpenAI,
# Google AI Studio, Google Vertex AI), by the gateway's id prefix.
TIERED_PROVIDERS = ("openai/", "google/", "vertex/")
# The models OpenAI serves at ultrafast (the gateway's changelog, 2026-10-08).
ULTRAFAST_MODELS = frozenset({"openai/gpt-6-astra", "openai/gpt-6.1-sol"})
# Tiers the catalogue gives no price for and no price bounds: the spend guard asks (rfcs/0007).
UNPRICED_TIERS: frozenset[ServedTier] = frozenset({"priority", "ultrafast"})
MENU_KEY = "speed"  # the key of the chat input's menu and of the request's modelConfiguration
MENU_TITLE = "Speed"
MENU_DESCRIPTION = (
    "Fast mode and the provider's service tiers: faster serving at a higher price per token, or flex at a lower one."
)


class SpeedProperty(BaseModel):
    """The chat input's speed menu for one model: a JSON Schema property as VS Code reads it (the
    same shape as effort.EffortProperty)."""

    type: Literal["string"]
    title: str
    description: str
    enum: list[Choice]
    enumItemLabels: list[str]
    enumDescriptions: list[str]
    default: Choice
    group: Literal["navigation"]


def speed(value: Any) -> Speed | None:
    """An untrusted value as a speed `modelOptions` may ask, or None."""
    if isinstance(value, str) and value.lower() in SPEEDS:
        return value.lower()  # type: ignore[return-value]  # checked against Speed's values
    return None


def choice(value: Any) -> Choice | None:
    """An untrusted value as one of the menu's choices, or None."""
    if isinstance(value, str) and value.lower() in CHOICES:
        return value.lower()  # type: ignore[return-value]  # checked against Choice's values
    return None


def tiers(model_id: str) -> list[Tier]:
    """The service tiers a model takes, by the docs: flex and priority for its provider's models,
    ultrafast for the models OpenAI serves at it; a fast tier's own entry (`<id>-fast`) none."""
    if not model_id.startswith(TIERED_PROVIDERS) or model_id.endswith(FAST_SUFFIX):
        return []
    return ["flex", "priority", "ultrafast"] if model_id in ULTRAFAST_MODELS else ["flex", "priority"]


def choices(model: ModelInfo) -> list[Choice]:
    """The menu's choices for a model: standard, fast where the catalogue lists its fast tier, and
    the tiers its provider takes."""
    fast: list[Choice] = ["fast"] if model.fast is not None else []
    return ["standard", *fast, *tiers(model.id)]


def preselected(model: ModelInfo | None, model_id: str, fast: Speed | None, service_tier: str) -> Choice:
    """What is sent when nothing is chosen in the menu: the model's `modelOptions.speed` where it
    has a fast tier (or is not in the catalogue), else the `routing.serviceTier` setting where the
    model takes tiers, else standard."""
    if fast == "fast" and (model is None or model.fast is not None):
        return "fast"
    tier = choice(service_tier)
    return tier if tier in tiers(model_id) else "standard"


def menu(model: ModelInfo, preselect: Choice = "standard") -> SpeedProperty | None:
    """The speed menu, for a model with a fast tier or service tiers; it preselects what would be
    sent unchosen (`preselected`)."""
    offered = choices(model)
    if len(offered) == 1:
        return None
    return SpeedProperty(
        type="string",
        title=MENU_TITLE,
        description=MENU_DESCRIPTION,
        enum=offered,
        enumItemLabels=[LABELS[c] for c in offered],
        enumDescriptions=[_describe(model, c) for c in offered],
        default=preselect if preselect in offered else "standard",
        group="navigation",
    )


def _describe(model: ModelInfo, option: Choice) -> str:
    """What a choice costs, in the words of the catalogue where it gives a price, else the docs'."""
    if option == "standard":
        return f"Standard speed{_prices(model.pricing)}"
    if option == "fast":
        assert model.fast is not None, "offered only with a fast tier"
        return (
            f"The fast tier, billed at its own price{_prices(model.fast)}; standard speed where the"
            " gateway has no fast provider for it"
        )
    if option == "flex":
        return (
            "Flex: slower, best-effort serving, billed at the provider's flex rate, below the standard"
            " price (the model list gives no flex price); standard where the provider has no capacity for it"
        )
    if option == "priority":
        return (
            "Priority: faster, more available serving, billed at the provider's priority rate, above"
            " the standard price (the model list gives no priority price); standard where it is not served"
        )
    return (
        "Ultrafast: OpenAI's fastest serving, billed at its ultrafast rate, six times the standard"
        " price by the gateway's changelog (the model list gives no ultrafast price); US and global"
        " regions only, standard elsewhere"
    )


def _prices(pricing: Pricing) -> str:
    if pricing.input is None or pricing.output is None:
        return " (no price in the model list)"
    return f": {per_million(pricing.input)} in / {per_million(pricing.output)} out per million tokens"


def decide(model: ModelInfo | None, model_id: str, preselect: Choice, chosen: Any) -> Choice | None:
    """The choice to write into the request, or None when there is none (standard, nothing chosen);
    `preselect` is what the settings ask (the speed of `modelOptions`, the tier of
    `routing.serviceTier` where the model takes it). `chosen`: the menu's value from the request's
    `modelConfiguration`, untrusted; a value equal to what the menu preselects is the settings' own,
    not a choice. A model is never sent what it does not offer: "fast" without a fast tier in the
    catalogue, a tier its provider does not take."""
    menu_choice = choice(chosen)
    wanted = menu_choice if menu_choice is not None and menu_choice != preselect else preselect
    if wanted == "fast" and model is not None and model.fast is None:
        log.debug("%s has no fast tier in the model list: no speed sent", model_id)
        return None
    if wanted in ("flex", "priority", "ultrafast") and wanted not in tiers(model_id):
        log.debug("%s takes no %s tier: none sent", model_id, wanted)
        return None
    if wanted == preselect == "standard":
        return None  # nothing chosen, nothing to send
    return wanted  # the setting's tier too: only here is routing.serviceTier sent (body.py)


def asked_speed(body: Mapping[str, Any]) -> Speed | None:
    """The speed the request as sent asks for (`providerOptions.gateway.speed`, whoever set it)."""
    gateway = gateway_options_sent(body)
    return speed(gateway.get("speed")) if gateway is not None else None


def asked_tier(body: Mapping[str, Any]) -> ServedTier:
    """The service tier the request as sent asks for, whoever set it: a top-level `service_tier` of
    "ultrafast", else `providerOptions.gateway.serviceTier` (`fast` is the gateway's alias of
    priority), else default."""
    if body.get("service_tier") == "ultrafast":
        return "ultrafast"
    gateway = gateway_options_sent(body)
    tier = gateway.get("serviceTier") if gateway is not None else None
    if tier == "fast":
        return "priority"
    return tier if tier in ("flex", "priority") else "default"


def gateway_options_sent(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The request's `providerOptions.gateway` as sent (whoever set it), or None: what the estimate,
    the cache's guess and the rewrite check read of a body."""
    options = body.get("providerOptions")
    gateway = options.get("gateway") if isinstance(options, Mapping) else None
    return gateway if isinstance(gateway, Mapping) else None


def sent_pricing(model: ModelInfo, body: Mapping[str, Any]) -> Pricing:
    """The price of the request as sent: none for a tier the catalogue gives no price (priority,
    ultrafast: the guard asks) on a model that takes it; the fast tier's when it asks for fast and the
    model has one; else the standard price, which also bounds flex (the gateway may serve either at
    the standard tier, for no more: the estimate stays on the safe side)."""
    if asked_tier(body) in UNPRICED_TIERS and tiers(model.id):
        return Pricing()
    if asked_speed(body) == "fast" and model.fast is not None:
        return model.fast
    return model.pricing
