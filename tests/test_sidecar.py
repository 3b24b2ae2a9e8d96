"""The real sidecar as a subprocess, over JSON-RPC, against the loopback fake gateway: what each
method does. Faults, bad input, cancellation and concurrency: tests/test_reliability.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from conftest import text_of
from fake_gateway import FakeServer
from gateway_lm.rpc.pipes import MODES
from sidecar_client import Sidecar

USER = [{"role": 1, "name": None, "content": [{"type": "text", "value": "hi"}]}]


@pytest.fixture(params=MODES)
async def sidecar(gateway: FakeServer, request: pytest.FixtureRequest) -> AsyncIterator[Sidecar]:
    """The real sidecar in each stdio mode (rpc/pipes.py): `threads` is what Windows runs."""
    side = Sidecar()
    await side.start(gateway.base_url, {"logLevel": "debug"}, stdio=request.param)
    yield side
    await side.stop()


def chat_params(request_id: str, model: str, **extra: Any) -> dict[str, Any]:
    return {"requestId": request_id, "model": model, "messages": USER, **extra}


async def test_models_carry_picker_fields_and_prices(sidecar: Sidecar) -> None:
    result = await sidecar.request("gateway/models", {})
    models = {m["id"]: m for m in result["models"]}
    assert set(models) == {"fake/text", "fake/tools", "fake/reasoning", "fake/plain", "fake/agent-loop", "fake/pricey"}
    text = models["fake/text"]
    assert text["maxInputTokens"] == 200000 - 16384 and text["capabilities"]["toolCalling"] is True
    assert "$3.00 in / $15.00 out per million tokens" in text["tooltip"] and text["detail"] == "200K · $3.00/$15.00"
    assert "does not support tools" in models["fake/plain"]["tooltip"]
    # The extension shares counts between the models that count with the same encoding.
    assert {m["tokenizer"] for m in models.values()} == {"o200k_base"}


async def test_chat_streams_parts_before_the_result(sidecar: Sidecar, gateway: FakeServer) -> None:
    result = await sidecar.request("gateway/chat", chat_params("r1", "fake/reasoning"))
    parts = sidecar.parts["r1"]
    assert text_of(parts) == "Hello from the fake gateway."
    assert [p["type"] for p in parts][:1] == ["thinking"] and parts[-1]["type"] == "finish"
    assert result["finishReason"] == "stop" and result["responseId"] == "resp_fake_1"
    assert result["usage"]["inputTokens"] == 42 and result["usage"]["cachedTokens"] == 10


async def test_tool_schema_reaches_the_gateway_unchanged(sidecar: Sidecar, gateway: FakeServer) -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"class": {"$ref": "#/definitions/cls"}, "_private": {"type": "string"}, "type_name": {}},
        "definitions": {"cls": {"type": "string"}},
        "_private": True,
    }
    params = chat_params(
        "r2",
        "fake/tools",
        tools=[{"name": "pick", "description": "d", "inputSchema": schema}],
        modelOptions={"_capturingTokenCorrelationId": "x"},
    )
    await sidecar.request("gateway/chat", params)
    assert gateway.gateway.requests[-1]["body"]["tools"][0]["parameters"] == schema
    call = next(p for p in sidecar.parts["r2"] if p["type"] == "toolCall")
    assert call["name"] == "pick" and call["input"] == {"city": "Paris", "days": 2}


async def test_count_tokens_for_strings_and_messages(sidecar: Sidecar) -> None:
    result = await sidecar.request(
        "gateway/countTokens", {"model": "openai/gpt-5", "texts": ["hello world", "", USER[0]]}
    )
    assert result["counts"][:2] == [2, 0] and result["counts"][2] > 1


async def test_a_background_count_waits_for_the_tokenizer_to_load_on_its_own(gateway: FakeServer) -> None:
    # The extension's prefetch of tool strings: sent at start, it must not load the tokenizer under
    # the chat that streams then (the load holds the GIL); the sidecar loads it when the chats end.
    side = Sidecar()
    await side.start(gateway.base_url, load_tokenizer=False)
    try:
        answered: list[str] = []
        chat = asyncio.ensure_future(side.request("gateway/chat", chat_params("slow", "fake/paced-60-25")))
        await asyncio.sleep(0.1)  # the chat is streaming
        params = {"model": "fake/text", "texts": ["hello world", "name"], "background": True}
        background = asyncio.ensure_future(side.request("gateway/countTokens", params))
        chat.add_done_callback(lambda _: answered.append("chat"))
        background.add_done_callback(lambda _: answered.append("background"))
        counts = await asyncio.wait_for(background, 20)
        await asyncio.wait_for(chat, 20)
        assert answered == ["chat", "background"], "counted under the chat: the tokenizer was loaded for it"
        assert counts == {"counts": [2, 1]}
    finally:
        await side.stop()
    # Any other count loads the tokenizer at once, and the background counts waiting go with it.
    side = Sidecar()
    await side.start(gateway.base_url, load_tokenizer=False)
    try:
        answered = []
        chat = asyncio.ensure_future(side.request("gateway/chat", chat_params("slow2", "fake/paced-80-25")))
        await asyncio.sleep(0.1)
        background = asyncio.ensure_future(side.request("gateway/countTokens", params))
        background.add_done_callback(lambda _: answered.append("background"))
        chat.add_done_callback(lambda _: answered.append("chat"))
        await asyncio.sleep(0.1)
        assert await side.request("gateway/countTokens", {"model": "fake/text", "texts": ["x"]}) == {"counts": [1]}
        assert (await asyncio.wait_for(background, 20))["counts"] == [2, 1]
        await asyncio.wait_for(chat, 20)
        assert answered == ["background", "chat"]
    finally:
        await side.stop()


async def test_tools_are_withheld_from_models_without_tool_use(sidecar: Sidecar, gateway: FakeServer) -> None:
    await sidecar.request("gateway/models", {})
    tools = [{"name": "t", "description": "", "inputSchema": {"type": "object"}}]
    await sidecar.request("gateway/chat", chat_params("p", "fake/plain", tools=tools))
    assert "tools" not in gateway.gateway.requests[-1]["body"]


async def test_a_huge_count_does_not_hold_up_a_chat_and_stops_when_cancelled(sidecar: Sidecar) -> None:
    huge = "".join(f"    value{i} = compute(input[{i}])\n" for i in range(600_000))  # ~20 MB
    loop = asyncio.get_running_loop()
    started = loop.time()
    msg_id, counting = sidecar.start_request("gateway/countTokens", {"model": "openai/gpt-5", "texts": [huge]})
    chat = asyncio.ensure_future(sidecar.request("gateway/chat", chat_params("during", "fake/text")))
    done, _ = await asyncio.wait([chat, counting], return_when=asyncio.FIRST_COMPLETED)
    assert chat in done and counting not in done, "the chat answered while the count was still running"
    assert (await counting)["counts"][0] > 6_000_000
    whole = loop.time() - started  # the whole count, on this machine now
    msg_id, counting = sidecar.start_request("gateway/countTokens", {"model": "openai/gpt-5", "texts": [huge + "x"]})
    await asyncio.sleep(0.1)
    cancelled_at = loop.time()
    sidecar.cancel(msg_id)
    with pytest.raises(JsonRpcException) as caught:
        await counting
    assert caught.value.code == -32800
    # Measured against the whole count under the same load, not a fixed time: it stops within a piece.
    assert loop.time() - cancelled_at < whole / 2, "a cancelled count stops within a piece, not at its end"


async def test_counts_answered_in_place_keep_the_error_contract(sidecar: Sidecar) -> None:
    # Small counts are answered in place by pygls (a generator handler, methods.py): bad params
    # still get -32602 bad_request, and the next count works.
    with pytest.raises(JsonRpcException) as caught:
        await sidecar.request("gateway/countTokens", {"model": "openai/gpt-5", "texts": 5})
    assert caught.value.code == -32602
    assert caught.value.data["kind"] == "bad_request"
    counts = await sidecar.request("gateway/countTokens", {"model": "openai/gpt-5", "texts": ["hello world"] * 3})
    assert counts == {"counts": [2, 2, 2]}
