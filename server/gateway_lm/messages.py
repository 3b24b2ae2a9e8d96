"""The shapes that cross our boundaries.

Incoming (from the extension or the CLI) is validated with pydantic: it is small and arrives once per
request. Outgoing parts are plain dicts typed as TypedDicts: they are built per SSE event on the hot
path, where pydantic would cost more than the whole adapter.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import (
    NotRequired,
    TypedDict,
)  # pydantic reads typing.TypedDict only on Python 3.12+ (contract.py)

from .gateway.errors import ErrorKind

log = logging.getLogger(__name__)

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


# Bounds of the reasoning a response hands on to the next turn (rfcs/0002, "The reasoning round
# trip"). OpenAI's encrypted reasoning is a few KB per item; Anthropic's signatures and redacted
# thinking are larger, still far below these.
MAX_REASONING_ITEMS = 64  # per response
MAX_ENCRYPTED = 1 << 20  # characters of one item's encrypted content
MAX_SUMMARY = 64 * 1024  # characters of one summary part
MAX_SUMMARY_PARTS = 32
MAX_REASONING_ID = 256
# Characters of an item's encrypted content as a host that keeps only what a Responses item carries
# hands it back: tagged with the model, the item's id, the call after it and its summary
# (reasoning.tag); a longer one is dropped, never the request.
MAX_TAG_HEAD = 1 << 17  # characters of the tag's head (model, id, call, summary); its summary gives way
MAX_TAGGED = MAX_ENCRYPTED + MAX_TAG_HEAD + 16

_Id = Annotated[str, Field(min_length=1, max_length=MAX_REASONING_ID)]


class ReasoningItemIn(BaseModel):
    """A reasoning item as the extension hands it back (`ReasoningItem`, read as untrusted)."""

    model_config = ConfigDict(extra="ignore")
    id: _Id
    encryptedContent: Annotated[str, Field(min_length=1, max_length=MAX_ENCRYPTED)]
    summary: Annotated[list[Annotated[str, Field(max_length=MAX_SUMMARY)]], Field(max_length=MAX_SUMMARY_PARTS)] = []
    before: _Id | None = None


class ReasoningStateIn(BaseModel):
    """What a `reasoningState` part carried, back from the history: the model that reasoned."""

    model_config = ConfigDict(extra="ignore")
    model: _Id
    items: Annotated[list[ReasoningItemIn], Field(max_length=MAX_REASONING_ITEMS)]


def _dropped_when_invalid(what: str) -> WrapValidator:
    """History is untrusted (another extension's metadata, an older build's, a host's): a part of it
    that does not read costs that part, never the request."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError as error:
            log.debug("%s in the history was dropped: %s", what, error.errors()[0]["msg"])
            return None

    return WrapValidator(validate)


_Tagged = Annotated[str, Field(min_length=1, max_length=MAX_TAGGED)]


class ThinkingIn(_Part):
    type: Literal["thinking"]
    value: str | list[str] = ""
    id: str | None = None
    state: Annotated[ReasoningStateIn | None, _dropped_when_invalid("a reasoning state")] = None
    # One reasoning item's encrypted content as the Copilot harness's bridge hands it back (the
    # thinking part's `encrypted_content` or `encrypted` metadata), tagged (reasoning.tag).
    tagged: Annotated[_Tagged | None, _dropped_when_invalid("a tagged reasoning item")] = None


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


# Characters of a model id: the catalogue drops a longer one, a request naming one is refused, and
# a usage record holds no other (usage.py, history.py, extension/contract.ts).
MAX_MODEL_ID = 200
ModelId = Annotated[str, Field(min_length=1, max_length=MAX_MODEL_ID)]
# A provider group of the Language Models editor (rfcs/0010): the
# extension's tag of the group's key (hex of its hash, never the key), kept on each request and usage
# record; None is the default key (the environment's, or one stored before groups existed).
MAX_GROUP = 64
GROUP_PATTERN = r"^[A-Za-z0-9_-]+$"
GroupId = Annotated[str, Field(min_length=1, max_length=MAX_GROUP, pattern=GROUP_PATTERN)]


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: ModelId
    messages: list[MessageIn]
    tools: list[ToolIn] = []
    toolMode: int = TOOL_MODE_AUTO
    modelOptions: dict[str, Any] = {}
    # The user's choices in the model's chat-input controls (picker.ModelEntry.configurationSchema),
    # with the schema's defaults, as VS Code passes them; read leniently (effort.decide).
    modelConfiguration: dict[str, Any] = {}


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


class ReasoningItem(TypedDict):
    id: str
    encryptedContent: str
    summary: list[str]
    before: str | None  # the call id of the function call that came right after it, if one did


class ReasoningStatePart(TypedDict):
    """The encrypted reasoning of a response, for the model's next turn (rfcs/0002, "The reasoning
    round trip"). Opaque: never shown; the extension hands it to VS Code as thinking metadata, which
    comes back in the history as `ThinkingIn.state`."""

    type: Literal["reasoningState"]
    model: str  # the model that reasoned: another model cannot read it
    items: list[ReasoningItem]


class ReasoningItemPart(TypedDict):
    """One reasoning item, as soon as it is done, for a host that keeps only what a Responses item
    carries (the Copilot harness's bridge, rfcs/0002 "The reasoning round trip"): the extension
    reports it as a thinking part whose `encrypted_content` metadata is `tagged`. Opaque, never shown."""

    type: Literal["reasoningItem"]
    id: str
    tagged: str  # the encrypted content, tagged with the model and the item (reasoning.tag)


ServedTier = Literal["default", "flex", "priority", "ultrafast"]
"""The service tier that served a request, as the response says it (rfcs/0007, "Speed per request"):
`default` when it names none (the gateway names only flex, priority and ultrafast)."""


class UsagePart(TypedDict):
    """The terminal response's usage (stream/usage.py): cached and cache-write tokens are input
    tokens read from and written to the prompt cache; reasoning tokens are output tokens."""

    type: Literal["usage"]
    inputTokens: int
    outputTokens: int
    totalTokens: int
    cachedTokens: int
    cacheWriteTokens: int
    reasoningTokens: int
    # The model that answered, when a team routing rule rewrote the one requested to another listed
    # model (rfcs/0003-rpc-contract.md, "A team's routing rules"); absent when the requested one did.
    servedModel: NotRequired[ModelId]
    servedTier: ServedTier


FinishReason = Literal["stop", "length", "toolCalls", "contentFilter", "refusal"]


class FinishPart(TypedDict):
    type: Literal["finish"]
    reason: FinishReason
    responseId: str | None


PartOut = TextPart | ThinkingPart | ToolCallPart | ReasoningItemPart | ReasoningStatePart | UsagePart | FinishPart
"""What a chat streams (`gateway/parts`, the CLI's --json lines). A failure is no part: it ends the
request as an error."""


class ErrorPart(TypedDict):
    """The CLI's last --json line when a command fails."""

    type: Literal["error"]
    kind: ErrorKind
    message: str
    status: int | None
