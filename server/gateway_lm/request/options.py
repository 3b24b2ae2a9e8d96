"""Per-model options: the `vercelAiGateway.modelOptions` setting (patterns → options) and the
`modelOptions` a caller passes through `vscode.lm` (rfcs/0007-network-and-options.md).

Every option is validated on its own: a bad one is dropped with a message naming the pattern, and the
pattern's other options still apply. A caller's bad option fails its request (bad_request), since
silently ignoring what a caller asked for would answer a different question.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ..gateway.errors import GatewayError, with_advice
from ..gateway.headers import FORBIDDEN_HEADERS, TOKEN, header_value_problem, with_headers
from ..offer.effort import Effort
from ..offer.speed import Speed

MAX_OUTPUT_TOKENS = 100_000_000
MAX_EXTRA_BODY = 64 << 10  # bytes of JSON: room for provider options, not for a smuggled prompt
# What the request is made of, and what Copilot's conversation decides: never the user's to override.
# And `store`, always false: with `true` the provider keeps the conversation (rfcs/0007, "Privacy").
RESERVED_BODY_KEYS = frozenset({"model", "input", "instructions", "tools", "tool_choice", "stream", "store"})
# An extraBody key whose name holds one of these (lower case, `-` and `_` left out) holds a secret:
# `apiKey`, `secretAccessKey`, `sessionToken`, `googleCredentials.privateKey` (the gateway's BYOK
# `providerOptions.gateway.byok`, a provider's own options). Every string under such a key is
# redacted from logs, here and in the extension's trace (extension/contract.ts carries the list).
SECRET_WORDS = ("apikey", "secret", "token", "password", "passwd", "credential", "privatekey", "accesskey", "auth")
# The routing settings that are a privacy policy: `providerOptions.gateway.<key>` → the Settings field.
# When the setting is on (or, for `only`, not empty), it holds over a model's extraBody
# (body.py), and the configure message names the option it overrode.
PRIVACY_OPTIONS = {
    "zeroDataRetention": "zeroDataRetention",
    "disallowPromptTraining": "disallowPromptTraining",
    "only": "gatewayOnly",
}


def _extra_body(value: dict[str, JsonValue]) -> dict[str, JsonValue]:
    reserved = sorted(RESERVED_BODY_KEYS & value.keys())
    if reserved:
        raise ValueError(f"may not set {', '.join(reserved)} (the request's own fields; store stays false)")
    provider_options = value.get("providerOptions", {})
    if not isinstance(provider_options, dict) or not isinstance(provider_options.get("gateway", {}), dict):
        # merged over the routing settings, anything else would replace them all
        raise ValueError("providerOptions and providerOptions.gateway must be objects")
    try:
        size = len(json.dumps(value, allow_nan=False))
    except (ValueError, RecursionError):
        raise ValueError("must be plain JSON (finite numbers, not nested too deeply)") from None
    if size > MAX_EXTRA_BODY:
        raise ValueError(f"is larger than {MAX_EXTRA_BODY >> 10} KiB")
    return value


def _extra_headers(value: dict[str, str]) -> dict[str, str]:
    seen: set[str] = set()
    for name, text in value.items():
        if not TOKEN.match(name):
            raise ValueError(f"'{name[:40]}' is not a header name")
        if name.lower() in FORBIDDEN_HEADERS:
            raise ValueError(f"may not set '{name}' (the API key's, or HTTP's own)")
        if name.lower() in seen:
            raise ValueError(f"names '{name}' twice (header names ignore case)")
        seen.add(name.lower())
        problem = header_value_problem(text)
        if problem:
            raise ValueError(f"the value of '{name}' {problem}")
    return value


class ModelOptions(BaseModel):
    """What one pattern of `vercelAiGateway.modelOptions` may set."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    maxOutputTokens: Annotated[int, Field(ge=16, le=MAX_OUTPUT_TOKENS)] | None = None
    reasoningEffort: Effort | None = None
    speed: Speed | None = None  # "fast": the gateway's fast tier (speed.py); the chat input's menu overrides it
    extraBody: Annotated[dict[str, JsonValue], AfterValidator(_extra_body)] = {}
    extraHeaders: Annotated[dict[str, str], AfterValidator(_extra_headers)] = {}


def valid_model_options(raw: object) -> tuple[dict[str, ModelOptions], list[str]]:
    """The setting's valid options, pattern by pattern, and what was dropped (one line each)."""
    if not isinstance(raw, Mapping):
        return {}, ["must be an object keyed by model id or pattern"]
    valid: dict[str, ModelOptions] = {}
    dropped: list[str] = []
    for pattern, options in raw.items():
        if not isinstance(options, Mapping):
            dropped.append(f"'{pattern}': must be an object of options")
            continue
        kept, why = _valid_options(dict(options))
        valid[str(pattern)] = kept
        dropped += [f"'{pattern}': {reason}" for reason in why]
    return valid, dropped


def _valid_options(options: dict[str, Any]) -> tuple[ModelOptions, list[str]]:
    try:
        return ModelOptions.model_validate(options), []
    except ValidationError as error:
        bad = {str(e["loc"][0]): _reason(e) for e in error.errors() if e["loc"]}
    kept = {k: v for k, v in options.items() if k not in bad}
    try:
        return ModelOptions.model_validate(kept), [f"{name} dropped ({why})" for name, why in bad.items()]
    except ValidationError:  # not expected: each remaining option validated above
        return ModelOptions(), ["all its options dropped"]


def _reason(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown option; known: " + ", ".join(ModelOptions.model_fields)
    return str(error["msg"]).removeprefix("Value error, ")


def for_model(model: str, table: Mapping[str, ModelOptions]) -> ModelOptions:
    """The options for `model`: every matching pattern (fnmatch, case-sensitive), the least specific
    first so a more specific one overrides it option by option (extraBody and extraHeaders key by
    key, header names in any case). An exact id is the most specific; then the pattern with more
    literal characters; on a tie, the later one in the setting."""
    matches = [(_specificity(p), i, o) for i, (p, o) in enumerate(table.items()) if fnmatchcase(model, p)]
    merged: dict[str, Any] = {}
    for _, _, options in sorted(matches, key=lambda m: (m[0], m[1])):
        for name in options.model_fields_set:
            value = getattr(options, name)
            if name == "extraBody":
                merged[name] = deep_merge(merged.get(name, {}), value)
            elif name == "extraHeaders":
                merged[name] = with_headers(merged.get(name, {}), value)
            else:
                merged[name] = value
    return ModelOptions.model_construct(**merged)


def _specificity(pattern: str) -> tuple[bool, int]:
    wild = any(c in pattern for c in "*?[")
    return (not wild, len(re.sub(r"\*|\?|\[[^\]]*\]", "", pattern)))


def gateway_extra(options: ModelOptions) -> Mapping[str, Any]:
    """The `providerOptions.gateway` a model's extraBody sets (an object: `_extra_body` checked it)."""
    provider_options = options.extraBody.get("providerOptions")
    gateway = provider_options.get("gateway") if isinstance(provider_options, dict) else None
    return gateway if isinstance(gateway, dict) else {}


def privacy_overrides(table: Mapping[str, ModelOptions], held: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(pattern, key) of each `providerOptions.gateway.<key>` an extraBody sets that a privacy setting
    overrides. `held`: PRIVACY_OPTIONS' keys → the value the setting sends (only those that are on)."""
    return [
        (pattern, key)
        for pattern, options in table.items()
        for key, value in gateway_extra(options).items()
        if key in held and value != held[key]
    ]


def is_secret_name(name: str) -> bool:
    normal = name.lower().replace("-", "").replace("_", "")
    return any(word in normal for word in SECRET_WORDS)


def secrets_in(value: Any, secret: bool = False) -> list[str]:
    """The strings of `value` (an extraBody) under a key with a secret's name, at any depth."""
    if isinstance(value, str):
        return [value] if secret else []
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in secrets_in(item, secret or is_secret_name(str(key)))]
    if isinstance(value, list):
        return [s for item in value for s in secrets_in(item, secret)]
    return []


def deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`extra` over `base`; objects in both are merged, anything else is replaced."""
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        out[key] = deep_merge(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return out


# ---- a caller's modelOptions (vscode.lm's sendRequest) ----

_CALLER_KEYS = {  # the names callers use → ours; any other key is not ours to read (Copilot's `_…`)
    "temperature": "temperature",
    "top_p": "top_p",
    "topP": "top_p",
    "max_output_tokens": "maxOutputTokens",
    "maxOutputTokens": "maxOutputTokens",
    "max_tokens": "maxOutputTokens",
    "maxTokens": "maxOutputTokens",
    "reasoning_effort": "reasoningEffort",
    "reasoningEffort": "reasoningEffort",
}


def from_caller(model_options: Mapping[str, Any]) -> ModelOptions:
    """The known options a caller passed; a bad one fails the request with a message naming it."""
    known = {_CALLER_KEYS[k]: (k, v) for k, v in model_options.items() if k in _CALLER_KEYS and v is not None}
    problems: list[str] = []
    for ours, (theirs, value) in known.items():
        if isinstance(value, bool) or (isinstance(value, float) and not math.isfinite(value)):
            problems.append(f"{theirs}: must be a number" if ours != "reasoningEffort" else f"{theirs}: bad value")
            continue
        try:
            ModelOptions.model_validate({ours: value})
        except ValidationError as error:
            problems.append(f"{theirs}: {_reason(error.errors()[0])}")
    if problems:
        detail = f"Invalid modelOptions in the request: {'; '.join(problems)}"
        raise GatewayError("bad_request", with_advice("bad_request", detail))
    return ModelOptions.model_validate({ours: value for ours, (_, value) in known.items()})


def apply(body: dict[str, Any], options: ModelOptions) -> None:
    """Writes `options` into a request body (extraBody first, so the named options win). The
    reasoning effort is not written here: it is decided with the model's levels (effort.decide)."""
    fields = options.model_fields_set
    if options.extraBody:
        merged = deep_merge(body, {k: v for k, v in options.extraBody.items() if k not in RESERVED_BODY_KEYS})
        body.clear()
        body.update(merged)
    if "temperature" in fields and options.temperature is not None:
        body["temperature"] = options.temperature
    if "top_p" in fields and options.top_p is not None:
        body["top_p"] = options.top_p
    if "maxOutputTokens" in fields and options.maxOutputTokens is not None:
        body["max_output_tokens"] = options.maxOutputTokens
