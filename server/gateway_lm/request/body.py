"""A request's body in one pass: the conversation (translate.py), then every per-model field a
request carries, decided here in the order each is written, a later step over an earlier one
(rfcs/0007-network-and-options.md):

1. the settings' own fields: the output limit; `providerOptions.gateway`'s routing, privacy,
   service tier and attribution (a setting left at its default sends nothing); the prompt cache's
   top-level `caching`, `cache_anchor_items` and `prompt_cache_key` (cache.py, rfcs/0011);
2. the `vercelAiGateway.modelOptions` patterns that match the model (application-scoped: a
   workspace cannot set them), then a `vscode.lm` caller's `modelOptions`: extra body first, the
   named options over it;
3. the privacy settings that are on, held over whatever an extra body merged in;
4. the reasoning effort, one the model accepts (offer/effort.py): the chat input's menu over a
   caller's over the settings';
5. the speed or service tier (offer/speed.py), "fast" only for a model with a fast tier, a tier only
   for a model whose provider takes it: the chat input's menu over the model's options and
   `routing.serviceTier`;
6. the encrypted reasoning asked back, decided last (an extra body may have asked for reasoning);
7. `input` moved to the end of the body: every field before it is the same from one request of a
   conversation to the next, so a request's bytes up to its last item begin the next request's
   (rfcs/0011, "One prefix, byte for byte").

What the model offers (its levels, its fast tier) comes from its catalogue entry, what the user
chose in the chat input from the request's `modelConfiguration`; the translation of the messages
never reaches back into any of it. The headers go with the body (`extra_headers`): the cache key's
`x-session-affinity`, and the model's options' own over it.
The context size the user chose is not a field: it is the limit the body is fitted into (fit.py)."""

from __future__ import annotations

import logging
from typing import Any

from ..gateway.headers import header_value_problem, with_headers
from ..messages import ChatRequest
from ..offer import speed
from ..offer.catalogue import ModelInfo
from ..offer.effort import MENU_KEY, Effort, by_rule, decide, level, nearest
from ..settings import Settings, held_privacy
from ..toolnames import ToolNameMap
from .cache import AFFINITY_HEADER, cache_fields
from .options import apply, for_model, from_caller
from .translate import conversation

log = logging.getLogger(__name__)
ENCRYPTED_REASONING = "reasoning.encrypted_content"


def build_request(
    request: ChatRequest,
    settings: Settings,
    names: ToolNameMap,
    model: ModelInfo | None = None,
    unreasoned_as_text: bool = False,
) -> dict[str, Any]:
    """`model`: the catalogue's entry, None when the model is not in it. When it reasons, its
    encrypted reasoning is asked for (the gateway stores nothing with `store: false`), to hand back
    on the next tool turn (reasoning.py); models that do not reason refuse the `include`.
    `unreasoned_as_text`: translate.conversation."""
    body, marked = conversation(request, names, unreasoned_as_text)
    body.update(_from_settings(settings))  # 1
    body.update(cache_fields(body["input"], marked, body.get("instructions", ""), request.model, settings.caching))
    apply(body, for_model(request.model, settings.modelOptions))  # 2
    caller = from_caller(request.modelOptions)
    apply(body, caller)
    _hold_privacy(body, settings)  # 3
    _set_effort(body, request, settings, model, caller.reasoningEffort)  # 4
    _set_speed(body, request, settings, model)  # 5
    reasons = model is not None and model.reasoning  # 6
    if reasons or "reasoning" in body or any(i["type"] == "reasoning" for i in body["input"]):
        body["include"] = [ENCRYPTED_REASONING]
    body["input"] = body.pop("input")  # 7
    return body


def extra_headers(request: ChatRequest, settings: Settings, body: dict[str, Any] | None = None) -> dict[str, str]:
    """The headers the request adds to the client's own: `x-session-affinity`, the body's
    `prompt_cache_key` (the gateway's cache locality across providers, rfcs/0011), then the model's
    options' `extraHeaders` over it."""
    key = body.get("prompt_cache_key") if body is not None else None
    ours = {AFFINITY_HEADER: key} if isinstance(key, str) and key and header_value_problem(key) is None else {}
    return with_headers(ours, for_model(request.model, settings.modelOptions).extraHeaders)


def _from_settings(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if settings.maxOutputTokens:
        options["max_output_tokens"] = max(16, settings.maxOutputTokens)
    routing = gateway_options(settings)
    if routing:
        options["providerOptions"] = {"gateway": routing}
    return options


def gateway_options(settings: Settings) -> dict[str, Any]:
    """`providerOptions.gateway`: routing, privacy and attribution (names as in @ai-sdk/gateway's
    GatewayProviderOptions, rfcs/0006-spend.md). A setting left at its default sends nothing. Caching
    is not here: its fields are top-level on `/v1/responses` (cache.py); nor is `routing.serviceTier`,
    sent by _set_speed only to a model whose provider takes tiers (rfcs/0007, "Speed per request")."""
    chosen: dict[str, Any] = {
        "order": settings.gatewayOrder,
        "only": settings.gatewayOnly,
        "models": settings.gatewayModels,
        "sort": None if settings.gatewaySort == "default" else settings.gatewaySort,
        "zeroDataRetention": settings.zeroDataRetention,
        "disallowPromptTraining": settings.disallowPromptTraining,
        "user": settings.attributionUser,
        "tags": settings.attributionTags,
    }
    return {key: value for key, value in chosen.items() if value}


def _hold_privacy(body: dict[str, Any], settings: Settings) -> None:
    """The privacy settings that are on, written back over whatever a model's extraBody merged in
    (rfcs/0007, "Privacy settings hold"); `store` is never the extraBody's (options.RESERVED_BODY_KEYS)."""
    held = held_privacy(settings)
    if held:
        _gateway_option(body, held)


def _set_effort(
    body: dict[str, Any], request: ChatRequest, settings: Settings, model: ModelInfo | None, caller: Effort | None
) -> None:
    """The reasoning effort, from the menu in the chat input, a caller or the settings, as one the
    model accepts; an effort an extra body set is held to the same levels."""
    efforts = model.efforts if model is not None else None
    decision = decide(
        request.model,
        efforts,
        model is not None,
        settings.effort_for(request.model),
        request.modelConfiguration.get(MENU_KEY),
        caller,
    )
    if decision.note:
        log.info("%s", decision.note)
    if decision.level is not None:
        body["reasoning"] = {"effort": decision.level, "summary": "auto"}
        return
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        if model is not None and efforts is None:
            body.pop("reasoning")  # a model that does not reason
        elif (asked := level(reasoning["effort"])) is not None and asked != "default":
            body["reasoning"] = {**reasoning, "effort": nearest(asked, efforts or by_rule(request.model))}


def _set_speed(body: dict[str, Any], request: ChatRequest, settings: Settings, model: ModelInfo | None) -> None:
    """The speed or tier the menu in the chat input chose, or the model's options ask (speed.py):
    "fast" as `providerOptions.gateway.speed`; flex and priority as `providerOptions.gateway.serviceTier`;
    ultrafast as the top-level `service_tier` (the gateway takes it only there). A choice of a speed or
    a tier replaces the tier the settings or an extra body set; an extra body's own speed is left as set."""
    preselect = speed.preselected(model, request.model, settings.speed_for(request.model), settings.serviceTier)
    chosen = speed.decide(model, request.model, preselect, request.modelConfiguration.get(speed.MENU_KEY))
    if chosen is None:
        return
    body.pop("service_tier", None)
    gateway = dict((body.get("providerOptions") or {}).get("gateway") or {})
    gateway.pop("serviceTier", None)
    if chosen == "fast":
        gateway["speed"] = "fast"
    elif chosen in ("flex", "priority"):
        gateway["serviceTier"] = chosen
    elif chosen == "ultrafast":
        body["service_tier"] = "ultrafast"
    provider_options = {**(body.get("providerOptions") or {})}
    if gateway:
        provider_options["gateway"] = gateway
    else:
        provider_options.pop("gateway", None)
    if provider_options:
        body["providerOptions"] = provider_options
    else:
        body.pop("providerOptions", None)


def _gateway_option(body: dict[str, Any], fields: dict[str, Any]) -> None:
    """`fields` over the body's `providerOptions.gateway`, copying on the way: the objects an
    extraBody set stay as set (they are the setting's own)."""
    provider_options = dict(body.get("providerOptions") or {})
    provider_options["gateway"] = {**(provider_options.get("gateway") or {}), **fields}
    body["providerOptions"] = provider_options
