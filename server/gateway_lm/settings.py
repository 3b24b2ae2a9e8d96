"""The extension's settings as the sidecar takes them: validated field by field, bounded, and never
fatal — a setting that does not read keeps its previous value and is named in one message
(rfcs/0003-rpc-contract.md, `gateway/configure`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args
from urllib.parse import unquote, urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from .gateway.headers import header_value_problem
from .offer.effort import Effort
from .offer.speed import Speed
from .offer.virtual import valid_virtual_models
from .request.cache import CacheMode
from .request.options import (
    PRIVACY_OPTIONS,
    ModelOptions,
    for_model,
    privacy_overrides,
    secrets_in,
    valid_model_options,
)

MAX_TOKENS_SETTING = 100_000_000
MAX_CONNECT_TIMEOUT = 600.0  # seconds
MAX_IDLE_TIMEOUT = 3600.0
MAX_REQUEST_TIMEOUT = 86400.0
MAX_RETRIES = 10
LOG_LEVELS = frozenset({"error", "warn", "warning", "info", "debug", "trace"})
_OTHER_IDS = {  # the settings' ids in VS Code where they are not `vercelAiGateway.<name>`
    "gatewayOrder": "vercelAiGateway.routing.order",
    "gatewayOnly": "vercelAiGateway.routing.only",
    "gatewayModels": "vercelAiGateway.routing.fallbackModels",
    "proxy": "http.proxy",
    "proxyStrictSSL": "http.proxyStrictSSL",
    "noProxy": "http.noProxy",
    "proxyAuthorization": "http.proxyAuthorization",
    "systemCertificates": "http.systemCertificates",
    "maxRequestCost": "vercelAiGateway.spend.maxRequestCost",
    "maxDailyCost": "vercelAiGateway.spend.maxDailyCost",
    "usageRetentionDays": "vercelAiGateway.usage.retentionDays",
    "gatewaySort": "vercelAiGateway.routing.sort",
    "zeroDataRetention": "vercelAiGateway.routing.zeroDataRetention",
    "disallowPromptTraining": "vercelAiGateway.routing.disallowPromptTraining",
    "serviceTier": "vercelAiGateway.routing.serviceTier",
    "caching": "vercelAiGateway.routing.caching",
    "attributionUser": "vercelAiGateway.attribution.user",
    "attributionTags": "vercelAiGateway.attribution.tags",
    "tagWorkspace": "vercelAiGateway.attribution.tagWorkspace",
}
MAX_COST_SETTING = 1_000_000.0  # USD; a limit above it is no limit
MAX_TAGS = 20
KEPT_IN_PART = frozenset({"modelOptions", "virtualModels"})  # settings whose valid entries apply, the rest dropped
MAX_TAG_LENGTH = 200


def setting_id(name: str) -> str:
    return SETTING_IDS.get(name, f"vercelAiGateway.{name}")


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL")
    return value


def _proxy_url(value: str | None) -> str | None:
    # The value may hold a password: the message never quotes it.
    if value is not None and value != "":
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// proxy URL")
    return value or None


def _header_value(value: str | None) -> str | None:
    problem = header_value_problem(value) if value is not None else None
    if problem:
        raise ValueError(problem)  # never the value: it is a secret
    return value or None


def _log_level(value: str) -> str:
    if value.lower() not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(sorted(LOG_LEVELS))}")
    return value


def _caching(value: object) -> object:
    return "auto" if value == "default" else value


def _few_tags(value: list[str]) -> list[str]:
    # A validator, not max_length: that would type the setting as 21 tuple types in contract.ts.
    if len(value) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    return value


class Settings(BaseModel):
    """User settings that shape requests and transport. Names match the extension's settings
    (SETTING_IDS maps each to its id). Each is validated on its own: `updated_settings`."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True, allow_inf_nan=False)
    baseUrl: Annotated[str, AfterValidator(_http_url)] = "https://ai-gateway.vercel.sh/v1"
    reasoningEffort: Effort | None = None  # each model gets the nearest level it accepts (effort.py)
    reasoningEffortByModel: dict[str, Effort] = {}
    gatewayOrder: list[str] = []
    gatewayOnly: list[str] = []
    gatewayModels: list[str] = []
    maxOutputTokens: Annotated[int, Field(ge=1, le=MAX_TOKENS_SETTING)] | None = None
    outputReservation: Annotated[int, Field(ge=0, le=MAX_TOKENS_SETTING)] = 16384
    connectTimeout: Annotated[float, Field(gt=0, le=MAX_CONNECT_TIMEOUT)] = 10.0
    idleTimeout: Annotated[float, Field(gt=0, le=MAX_IDLE_TIMEOUT)] = 120.0
    # one whole answer, retries included (rfcs/0001, Limits)
    requestTimeout: Annotated[float, Field(gt=0, le=MAX_REQUEST_TIMEOUT)] = 900.0
    maxRetries: Annotated[int, Field(ge=0, le=MAX_RETRIES)] = 2
    caBundle: str | None = None  # a PEM file, added to the trusted certificates
    # VS Code's own network settings (`http.*`), read and passed on by the extension (rfcs/0007)
    proxy: Annotated[str | None, AfterValidator(_proxy_url)] = None
    proxyStrictSSL: bool = True
    noProxy: list[str] = []
    proxyAuthorization: Annotated[str | None, AfterValidator(_header_value)] = None  # a secret: never logged
    systemCertificates: bool = True
    modelOptions: dict[str, ModelOptions] = {}  # by model id or fnmatch pattern (options.py)
    logLevel: Annotated[str, AfterValidator(_log_level)] = "info"
    stateDir: str | None = None  # where the sidecar keeps what it learns (the extension's storage)
    # Spend guard and usage history (rfcs/0006-spend.md): limits in USD, None is off.
    maxRequestCost: Annotated[float, Field(ge=0, le=MAX_COST_SETTING)] | None = None
    maxDailyCost: Annotated[float, Field(ge=0, le=MAX_COST_SETTING)] | None = None
    usageRetentionDays: Annotated[int, Field(ge=1, le=3650)] = 90
    # Routing and attribution: `providerOptions.gateway` fields, "default" sends nothing; and caching.
    gatewaySort: Literal["default", "cost", "tps", "ttft"] = "default"
    zeroDataRetention: bool = False
    disallowPromptTraining: bool = False
    serviceTier: Literal["default", "flex", "priority"] = "default"
    # The prompt cache (rfcs/0011): "auto" places the breakpoints; "default", an older version's
    # value, meant the provider's own caching and now reads as the new default.
    caching: Annotated[CacheMode, BeforeValidator(_caching)] = "auto"
    attributionUser: Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)] | None = None
    attributionTags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)]], AfterValidator(_few_tags)
    ] = []
    tagWorkspace: bool = False  # the extension adds the "workspace:<name>" tag; named here with the others
    # Virtual models the user added by id (`vmc/<slug>`, offer/virtual.py), offered where the list lacks them.
    virtualModels: list[str] = []

    def effort_for(self, model: str) -> Effort | None:
        """The reasoning effort the settings ask for `model`: `modelOptions`' over
        `reasoningEffortByModel`'s over `reasoningEffort` (rfcs/0007); None when none asks."""
        option = for_model(model, self.modelOptions).reasoningEffort
        return option or self.reasoningEffortByModel.get(model) or self.reasoningEffort

    def speed_for(self, model: str) -> Speed | None:
        """The speed `modelOptions` asks for `model` (speed.py); None when none asks."""
        return for_model(model, self.modelOptions).speed


# Every setting's VS Code id, by its field: the one map between the two names. The extension reads
# the settings it sends through it (contract.ts' SETTING_IDS, generated from contract.CONSTANTS, which
# scripts/gen-contract.mjs checks against package.json); the sidecar names a bad value by its id.
SETTING_IDS: dict[str, str] = {
    name: _OTHER_IDS.get(name, f"vercelAiGateway.{name}") for name in Settings.model_fields if name != "stateDir"
}


def updated_settings(previous: Settings, raw: Mapping[str, Any]) -> tuple[Settings, dict[str, str]]:
    """`previous` with each valid value of `raw` applied; an invalid one keeps its previous value
    and is returned (name → why). `null` means "not set": the default."""
    new = previous.model_copy()
    problems: dict[str, str] = {}
    for name, value in raw.items():
        field = Settings.model_fields.get(name)
        if field is None:
            continue  # a newer extension's setting
        if value is None and type(None) not in get_args(field.annotation):
            value = field.get_default(call_default_factory=True)
        if name == "modelOptions":  # option by option: a bad one does not cost the others
            value, dropped = valid_model_options(value)
            if dropped:
                problems[name] = "; ".join(dropped)
        elif name == "virtualModels":  # id by id, likewise
            value, dropped = valid_virtual_models(value)
            if dropped:
                problems[name] = "; ".join(dropped)
        try:
            setattr(new, name, value)
        except ValidationError as error:
            # the message, never the value (a key pasted in)
            problems[name] = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
    overridden = [
        f"'{pattern}': extraBody's providerOptions.gateway.{key} not sent ({setting_id(PRIVACY_OPTIONS[key])} holds)"
        for pattern, key in privacy_overrides(new.modelOptions, held_privacy(new))
    ]
    if overridden:
        problems["modelOptions"] = "; ".join(filter(None, [problems.get("modelOptions"), *overridden]))
    return new, problems


def held_privacy(settings: Settings) -> dict[str, Any]:
    """The privacy settings that are on, as `providerOptions.gateway` sends them: they hold over a
    model's extraBody (rfcs/0007, "Privacy settings hold")."""
    sent = {key: getattr(settings, field) for key, field in PRIVACY_OPTIONS.items()}
    return {key: value for key, value in sent.items() if value}


def secrets_of(settings: Settings) -> list[str]:
    """What the settings hold that must never reach a log: the proxy's credentials, the values of
    extra headers (an API key of the user's own, often), and the strings under a secret's name in an
    extraBody (a provider key for the gateway's BYOK, options.secrets_in)."""
    password = urlsplit(settings.proxy).password if settings.proxy else None
    found = [settings.proxyAuthorization, password, unquote(password or "")]  # as written, and as sent
    found += [value for options in settings.modelOptions.values() for value in options.extraHeaders.values()]
    found += [value for options in settings.modelOptions.values() for value in secrets_in(options.extraBody)]
    return [secret for secret in found if secret]


def describe_problems(problems: Mapping[str, str]) -> str:
    # modelOptions and virtualModels keep their valid entries (the message says which were dropped);
    # the others keep their previous value or default.
    named = "; ".join(
        f"{setting_id(n)}: {why}" + ("" if n in KEPT_IN_PART else " (kept the previous value)")
        for n, why in problems.items()
    )
    return f"Ignored invalid settings: {named}."
