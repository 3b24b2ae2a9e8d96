"""The chat path: the body built (and fitted) → client → adapt.

The chat service (chats.py) runs it for both front ends: it prepares a request once, prices that body
for the spend guard, and streams it; `stream_chat` runs the two steps back to back with nothing
around them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Container
from dataclasses import dataclass
from typing import Any

from .gateway.client import GatewayClient, encode_body
from .gateway.errors import GatewayError
from .messages import ChatRequest, FinishReason, PartOut, UsagePart
from .offer.catalogue import FAST_SUFFIX, ModelInfo
from .offer.speed import gateway_options_sent
from .offer.virtual import VIRTUAL_PREFIX
from .request.body import build_request, extra_headers
from .request.fit import ClearedResults, InputLimit, fit_request, has_tool_results
from .settings import Settings
from .stream.adapt import StreamAdapter
from .toolnames import ToolNameMap


@dataclass
class ChatOutcome:
    usage: UsagePart | None = None
    finish_reason: FinishReason | None = None
    response_id: str | None = None
    generation_id: str | None = None  # the gateway's, when the response names one (rfcs/0006-spend.md)
    body: dict[str, Any] | None = None  # the request as sent, for calibration
    # The real input limit the request was fitted to, and the factor of the model's window as listed
    # once the turn is over: the usage part's unit (chats.py; rfcs/0004, "The rest of the turn")
    input_limit: int | None = None
    budget_factor: float | None = None


@dataclass
class Prepared:
    """A request as it will be sent: translated, fitted into the model's limit, with the tool names
    it was translated with and the model's extra headers. The spend guard prices this body.
    `content`: the body encoded, when it was (the client encodes it otherwise)."""

    body: dict[str, Any]
    names: ToolNameMap
    headers: dict[str, str]
    content: bytes | None = None


async def prepare(
    request: ChatRequest,
    settings: Settings,
    model: ModelInfo | None = None,
    limit: InputLimit | None = None,
    unreasoned_as_text: bool = False,
    cleared: ClearedResults | None = None,
) -> Prepared:
    """`model`: the catalogue's entry (body.build_request); `limit`: the model's real input
    limit, which the request is fitted into (fit.py); `unreasoned_as_text`: body.build_request;
    `cleared`: the tool results earlier requests were sent with cleared (fit.ClearedResults)."""
    names = ToolNameMap([tool.name for tool in request.tools])
    body = build_request(request, settings, names, model, unreasoned_as_text)
    if limit is not None and has_tool_results(body):  # encoding and counting it hold no event loop
        body, content = await asyncio.to_thread(_fitted, body, request.model, limit, cleared)
    else:
        content = _encoded(body)
    return Prepared(body, names, extra_headers(request, settings, body), content)


def _fitted(
    body: dict[str, Any], model: str, limit: InputLimit, cleared: ClearedResults | None
) -> tuple[dict[str, Any], bytes | None]:
    """The body fitted, and its bytes: encoded once, their length the fit's first bound, and sent as
    they are unless the fit cleared something (rfcs/0005, "The request path of a long session")."""
    content = _encoded(body)
    fitted = fit_request(body, model, limit, None if content is None else len(content), cleared)
    return fitted, content if fitted is body else _encoded(fitted)


def _encoded(body: dict[str, Any]) -> bytes | None:
    """None for a body that cannot be encoded: the client raises that when it sends it, after the guard, as before."""
    try:
        return encode_body(body)
    except (TypeError, ValueError, RecursionError):
        return None


async def stream_chat(
    request: ChatRequest,
    settings: Settings,
    client: GatewayClient,
    api_key: str | None,
    outcome: ChatOutcome | None = None,
) -> AsyncIterator[list[PartOut]]:
    """The request prepared as it is, then streamed: no pricing, guard, retry or accounts."""
    prepared = await prepare(request, settings)
    async for parts in stream_prepared(prepared, request.model, client, api_key, outcome):
        yield parts


def rewritten_by_rule(model: str, body: dict[str, Any], listed: Container[str]) -> Callable[[str], bool]:
    """Whether the model a response names is one a team routing rule served in place of `model`
    (rfcs/0003-rpc-contract.md, "A team's routing rules"): a model the list holds, other than the one
    requested and the request's own fallbacks (`providerOptions.gateway.models`, which the user
    asked for). A name the list does not hold is no rewrite: a provider names its own snapshot
    (OpenAI's streams say `gpt-4o-2024-08-06` for `gpt-4o`). Nor is a model's fast tier answering
    as the model, or the model as its fast tier (`<id>-fast`, one model at two speeds), nor any answer
    to a virtual model (`vmc/<slug>`), which is always served by the model its configuration names."""
    if model.startswith(VIRTUAL_PREFIX):
        return lambda reported: False
    gateway = gateway_options_sent(body)
    models = gateway.get("models") if gateway is not None else None
    fallbacks = {m for m in models if isinstance(m, str)} if isinstance(models, list) else set()
    asked = model.removesuffix(FAST_SUFFIX)
    return lambda reported: (
        reported.removesuffix(FAST_SUFFIX) != asked and reported not in fallbacks and reported in listed
    )


async def stream_prepared(
    prepared: Prepared,
    model: str,
    client: GatewayClient,
    api_key: str | None,
    outcome: ChatOutcome | None = None,
    listed: Container[str] = (),
) -> AsyncIterator[list[PartOut]]:
    """Batches of parts, one per network read that produced any. Raises GatewayError. `listed`: the
    ids of the model list, which tell a routing rule's rewrite (rewritten_by_rule)."""
    if outcome is not None:
        outcome.body = prepared.body
    adapter = StreamAdapter(prepared.names, model, rewritten_by_rule(model, prepared.body, listed))
    events = client.stream_events(prepared.body, api_key, prepared.headers, prepared.content)
    try:
        async for batch in events:
            parts: list[PartOut] = []
            try:
                adapter.feed_until_done(batch, parts)
            except GatewayError:
                if parts:
                    yield parts  # what the stream said before failing is still shown
                raise
            if parts:
                yield parts
            if adapter.done:
                break
        tail = adapter.end()
        if tail:
            yield tail
    finally:
        await events.aclose()  # closes the HTTP stream at once, also on cancellation
        if outcome is not None:
            outcome.usage = adapter.usage
            outcome.finish_reason = adapter.finish_reason
            outcome.response_id = adapter.response_id
            outcome.generation_id = adapter.generation_id
