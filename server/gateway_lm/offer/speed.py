"""Speed per request: the gateway's fast mode (rfcs/0007-network-and-options.md, "Speed per request").

The gateway serves a model's faster, dearer tier when a request sets `providerOptions.gateway.speed`
to "fast", and falls back to standard speed where there is none (vercel.com/docs/ai-gateway,
"Fast Mode"; changelog "AI Gateway adds unified fast mode support", 2026-07-29). The same tier has its
own id, `<model>-fast`, and that id is how the catalogue tells it: `/v1/models` has no field saying a
model has a fast tier, but it lists the fast id beside the model, with the fast tier's own prices.
So a model has a fast tier here when the catalogue lists `<id>-fast`, and what a fast request is
estimated at is that entry's price. Here:
- the menu Copilot shows beside the model in the chat input (beside effort's), with both prices;
- the speed a request carries: the user's choice in that menu over the `speed` of the model's
  `vercelAiGateway.modelOptions` (application-scoped: a workspace cannot set it), a caller's option
  over both; never "fast" for a model the catalogue lists without a fast tier;
- the price of what is sent, for the estimate and the spend guard.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

from ..money import per_million
from .catalogue import ModelInfo, Pricing

log = logging.getLogger(__name__)

Speed = Literal["standard", "fast"]
SPEEDS: tuple[Speed, ...] = ("standard", "fast")
MENU_KEY = "speed"  # the key of the chat input's menu and of the request's modelConfiguration
MENU_TITLE = "Speed"
MENU_DESCRIPTION = "Fast mode: the model's faster serving path, at a higher price per token."


class SpeedProperty(BaseModel):
    """The chat input's speed menu for one model: a JSON Schema property as VS Code reads it (the
    same shape as effort.EffortProperty)."""

    type: Literal["string"]
    title: str
    description: str
    enum: list[Speed]
    enumItemLabels: list[str]
    enumDescriptions: list[str]
    default: Speed
    group: Literal["navigation"]


def speed(value: Any) -> Speed | None:
    """An untrusted value as a speed, or None."""
    if isinstance(value, str) and value.lower() in SPEEDS:
        return value.lower()  # type: ignore[return-value]  # checked against Speed's values
    return None


def menu(model: ModelInfo, setting: Speed | None) -> SpeedProperty | None:
    """The speed menu, for a model with a fast tier; it preselects what would be sent unchosen."""
    if model.fast is None:
        return None
    return SpeedProperty(
        type="string",
        title=MENU_TITLE,
        description=MENU_DESCRIPTION,
        enum=list(SPEEDS),
        enumItemLabels=["Standard", "Fast"],
        enumDescriptions=[
            f"Standard speed{_prices(model.pricing)}",
            f"The fast tier, billed at its own price{_prices(model.fast)}; standard speed where the"
            " gateway has no fast provider for it",
        ],
        default=setting or "standard",
        group="navigation",
    )


def _prices(pricing: Pricing) -> str:
    if pricing.input is None or pricing.output is None:
        return " (no price in the model list)"
    return f": {per_million(pricing.input)} in / {per_million(pricing.output)} out per million tokens"


def decide(model: ModelInfo | None, setting: Speed | None, chosen: Any, caller: Speed | None) -> Speed | None:
    """The speed a request asks for (None: none is sent, standard). `chosen`: the menu's value from
    the request's `modelConfiguration`, untrusted; a value equal to what the menu preselects is the
    setting's own, not a choice. A model the catalogue lists without a fast tier is sent none."""
    menu_speed = speed(chosen)
    if caller is not None:
        wanted: Speed | None = caller
    elif menu_speed is not None and menu_speed != (setting or "standard"):
        wanted = menu_speed
    else:
        wanted = setting
    if wanted != "fast":
        return None
    if model is not None and model.fast is None:
        log.debug("%s has no fast tier in the model list: no speed sent", model.id)
        return None
    return "fast"


def asked_speed(body: Mapping[str, Any]) -> Speed | None:
    """The speed the request as sent asks for (`providerOptions.gateway.speed`, whoever set it)."""
    options = body.get("providerOptions")
    gateway = options.get("gateway") if isinstance(options, Mapping) else None
    return speed(gateway.get("speed")) if isinstance(gateway, Mapping) else None


def sent_pricing(model: ModelInfo, body: Mapping[str, Any]) -> Pricing:
    """The price of the request as sent: the fast tier's when it asks for fast and the model has one
    (the gateway may still serve it at standard speed, for less: the estimate stays on the safe side)."""
    if asked_speed(body) == "fast" and model.fast is not None:
        return model.fast
    return model.pricing
