"""The shapes that cross our boundaries.

Incoming (from the extension or the CLI) is validated with pydantic: it is small and arrives once per
request. Outgoing parts are plain dicts typed as TypedDicts: they are built per SSE event on the hot
path, where pydantic would cost more than the whole adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on Python 3.12+ (contract.py)

from .errors import ErrorKind

# ---- messages in (the extension's serialisation of VS Code messages) ----

ROLE_USER = 1
ROLE_ASSISTANT = 2
ROLE_SYSTEM = 3
TOOL_MODE_AUTO = 1
TOOL_MODE_REQUIRED = 2


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TextIn(_Part):
    type: Literal["text"]
    value: str


class ToolCallIn(_Part):
    type: Literal["toolCall"]
    callId: str
    name: str
    input: Any = Field(default_factory=dict)


class DataIn(_Part):
    type: Literal["data"]
    mimeType: str
    data: str  # base64


class ThinkingIn(_Part):
    type: Literal["thinking"]
    value: str | list[str] = ""
    id: str | None = None


class UnknownIn(_Part):
    """A part type we do not know (a newer VS Code), or a tool result inside a tool result: kept out of
    the request, never a crash. Tolerated, not part of the contract: no schema (contract.py)."""

    type: str


_KNOWN_PARTS = {"text", "toolCall", "toolResult", "data", "thinking"}


def _part_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _KNOWN_PARTS else "unknown"


ResultPartIn = Annotated[
    Annotated[TextIn, Tag("text")]
    | Annotated[DataIn, Tag("data")]
    | Annotated[ThinkingIn, Tag("thinking")]
    | Annotated[ToolCallIn, Tag("toolCall")]
    | Annotated[UnknownIn, Tag("toolResult"), SkipJsonSchema()]
    | Annotated[UnknownIn, Tag("unknown"), SkipJsonSchema()],
    Discriminator(_part_tag),
]


class ToolResultIn(_Part):
    type: Literal["toolResult"]
    callId: str
    content: list[ResultPartIn] = []


AnyPartIn = Annotated[
    Annotated[TextIn, Tag("text")]
    | Annotated[ToolCallIn, Tag("toolCall")]
    | Annotated[ToolResultIn, Tag("toolResult")]
    | Annotated[DataIn, Tag("data")]
    | Annotated[ThinkingIn, Tag("thinking")]
    | Annotated[UnknownIn, Tag("unknown"), SkipJsonSchema()],
    Discriminator(_part_tag),
]


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: int
    name: str | None = None
    content: list[AnyPartIn] = []


class ToolIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    description: str = ""
    inputSchema: dict[str, Any] | None = None


MAX_TOKENS_SETTING = 100_000_000
MAX_CONNECT_TIMEOUT = 600.0  # seconds
MAX_IDLE_TIMEOUT = 3600.0
MAX_REQUEST_TIMEOUT = 86400.0
MAX_RETRIES = 10
LOG_LEVELS = frozenset({"error", "warn", "warning", "info", "debug", "trace"})
SETTING_NAMES = {  # the extension's names for the settings whose names differ here
    "gatewayOrder": "routing.order",
    "gatewayOnly": "routing.only",
    "gatewayModels": "routing.fallbackModels",
    "maxRequestCost": "spend.maxRequestCost",
    "maxDailyCost": "spend.maxDailyCost",
    "usageRetentionDays": "usage.retentionDays",
    "gatewaySort": "routing.sort",
    "zeroDataRetention": "routing.zeroDataRetention",
    "disallowPromptTraining": "routing.disallowPromptTraining",
    "serviceTier": "routing.serviceTier",
    "caching": "routing.caching",
    "attributionUser": "attribution.user",
    "attributionTags": "attribution.tags",
    "tagWorkspace": "attribution.tagWorkspace",
}
MAX_COST_SETTING = 1_000_000.0  # USD; a limit above it is no limit
MAX_TAGS = 20
MAX_TAG_LENGTH = 200


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL")
    return value


def _log_level(value: str) -> str:
    if value.lower() not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(sorted(LOG_LEVELS))}")
    return value


def _few_tags(value: list[str]) -> list[str]:
    # A validator, not max_length: that would type the setting as 21 tuple types in contract.ts.
    if len(value) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    return value


class Settings(BaseModel):
    """User settings that shape requests and transport. Names match the extension's settings
    (SETTING_NAMES maps the few that differ). Each is validated on its own: `updated_settings`."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True, allow_inf_nan=False)
    baseUrl: Annotated[str, AfterValidator(_http_url)] = "https://ai-gateway.vercel.sh/v1"
    reasoningEffort: str | None = None
    reasoningEffortByModel: dict[str, str] = {}
    gatewayOrder: list[str] = []
    gatewayOnly: list[str] = []
    gatewayModels: list[str] = []
    maxOutputTokens: Annotated[int, Field(ge=1, le=MAX_TOKENS_SETTING)] | None = None
    outputReservation: Annotated[int, Field(ge=0, le=MAX_TOKENS_SETTING)] = 16384
    promptCacheKey: str | None = None
    connectTimeout: Annotated[float, Field(gt=0, le=MAX_CONNECT_TIMEOUT)] = 10.0
    idleTimeout: Annotated[float, Field(gt=0, le=MAX_IDLE_TIMEOUT)] = 120.0
    # one whole answer, retries included (rfcs/0001, Limits)
    requestTimeout: Annotated[float, Field(gt=0, le=MAX_REQUEST_TIMEOUT)] = 900.0
    maxRetries: Annotated[int, Field(ge=0, le=MAX_RETRIES)] = 2
    caBundle: str | None = None
    logLevel: Annotated[str, AfterValidator(_log_level)] = "info"
    stateDir: str | None = None  # where the sidecar keeps what it learns (the extension's storage)
    # Spend guard and usage history (rfcs/0006-spend.md): limits in USD, None is off.
    maxRequestCost: Annotated[float, Field(ge=0, le=MAX_COST_SETTING)] | None = None
    maxDailyCost: Annotated[float, Field(ge=0, le=MAX_COST_SETTING)] | None = None
    usageRetentionDays: Annotated[int, Field(ge=1, le=3650)] = 90
    # Routing and attribution: `providerOptions.gateway` fields; "default" sends nothing.
    gatewaySort: Literal["default", "cost", "tps", "ttft"] = "default"
    zeroDataRetention: bool = False
    disallowPromptTraining: bool = False
    serviceTier: Literal["default", "flex", "priority"] = "default"
    caching: Literal["default", "auto"] = "default"
    attributionUser: Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)] | None = None
    attributionTags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)]], AfterValidator(_few_tags)
    ] = []
    tagWorkspace: bool = False  # the extension adds the "workspace:<name>" tag; named here with the others


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
        try:
            setattr(new, name, value)
        except ValidationError as error:
            problems[name] = str(error.errors()[0]["msg"])  # the message, never the value (a key pasted in)
    return new, problems


def describe_problems(problems: Mapping[str, str]) -> str:
    named = "; ".join(f"vercelAiGateway.{SETTING_NAMES.get(n, n)}: {why}" for n, why in problems.items())
    return f"Ignored invalid settings (each keeps its previous value or default): {named}."


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[MessageIn]
    tools: list[ToolIn] = []
    toolMode: int = TOOL_MODE_AUTO
    modelOptions: dict[str, Any] = {}


# ---- parts out (the format every consumer reads; keep it exactly) ----


class TextPart(TypedDict):
    type: Literal["text"]
    value: str


class ThinkingPart(TypedDict):
    type: Literal["thinking"]
    value: str
    id: str | None


class ToolCallPart(TypedDict):
    type: Literal["toolCall"]
    callId: str
    name: str
    input: dict[str, Any]


class UsagePart(TypedDict):
    type: Literal["usage"]
    inputTokens: int
    outputTokens: int
    totalTokens: int
    cachedTokens: int
    reasoningTokens: int


FinishReason = Literal["stop", "length", "toolCalls", "contentFilter", "refusal"]


class FinishPart(TypedDict):
    type: Literal["finish"]
    reason: FinishReason
    responseId: str | None


PartOut = TextPart | ThinkingPart | ToolCallPart | UsagePart | FinishPart
"""What a chat streams (`gateway/parts`, the CLI's --json lines). A failure is no part: it ends the
request as an error."""


class ErrorPart(TypedDict):
    """The CLI's last --json line when a command fails."""

    type: Literal["error"]
    kind: ErrorKind
    message: str
    status: int | None
