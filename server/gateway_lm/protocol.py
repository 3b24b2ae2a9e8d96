"""The shapes that cross our boundaries.

Incoming (from the extension or the CLI) is validated with pydantic: it is small and arrives once per
request. Outgoing parts are plain dicts typed as TypedDicts: they are built per SSE event on the hot
path, where pydantic would cost more than the whole adapter.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

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
    """A part type we do not know (a newer VS Code): kept out of the request, never a crash."""

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
    | Annotated[UnknownIn, Tag("toolResult")]
    | Annotated[UnknownIn, Tag("unknown")],
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
    | Annotated[UnknownIn, Tag("unknown")],
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


class Settings(BaseModel):
    """User settings that shape requests and transport. Names match the extension's settings."""

    model_config = ConfigDict(extra="ignore")
    baseUrl: str = "https://ai-gateway.vercel.sh/v1"
    reasoningEffort: str | None = None
    reasoningEffortByModel: dict[str, str] = {}
    gatewayOrder: list[str] = []
    gatewayOnly: list[str] = []
    gatewayModels: list[str] = []
    maxOutputTokens: int | None = None
    outputReservation: int = 16384
    promptCacheKey: str | None = None
    connectTimeout: float = 10.0
    idleTimeout: float = 120.0
    requestTimeout: float = 900.0  # one whole answer, retries included (rfcs/0001, Limits)
    maxRetries: int = 2
    caBundle: str | None = None
    logLevel: str = "info"
    stateDir: str | None = None  # where the sidecar keeps what it learns (the extension's storage)


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


class ErrorPart(TypedDict):
    type: Literal["error"]
    kind: str
    message: str
    status: int | None


PartOut = TextPart | ThinkingPart | ToolCallPart | UsagePart | FinishPart | ErrorPart
