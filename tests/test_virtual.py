"""Virtual models (issue 45 §3): a team's saved gateway configuration, `vmc/<slug>`, added by its id
(`vercelAiGateway.virtualModels`) where the model list lacks it, offered with what the gateway says of
it and a clear word where it says nothing, and requested by its id: through the real sidecar and the
fake gateway, which answers `GET …/models/vmc/team-coder` and says nothing of any other."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from fake_gateway import FakeServer
from gateway_lm.offer.catalogue import DEFAULT_CONTEXT_WINDOW
from gateway_lm.offer.virtual import (
    MAX_VIRTUAL_MODELS,
    VIRTUAL_READ_TIMEOUT,
    entry_in,
    valid_virtual_models,
    virtual_model,
)
from sidecar_client import Sidecar

ADDED = ["vmc/team-coder", "vmc/quiet", "vmc/../etc", "fake/text", "vmc/quiet"]


@pytest.mark.timeout(120)  # a sidecar start (the tokenizer's load) and two chats
async def test_a_virtual_model_is_offered_with_what_the_gateway_says_and_requested_by_its_id(
    gateway: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GATEWAY_VIRTUAL", "1")
    side = Sidecar()
    await side.start(gateway.base_url + "/v1", {"maxRetries": 0, "virtualModels": ADDED})
    try:
        listed = {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}
        await side.request("gateway/chat", {"requestId": "q", "model": "vmc/quiet", "messages": [user("hi")]})
        sent = gateway.gateway.requests[-1]["body"]
        await side.request("gateway/models", {})  # a second list: the silent gateway is not logged again
    finally:
        await side.stop()
    # What the gateway says: its window, prices and tags, as a catalogue entry.
    coder = listed["vmc/team-coder"]
    assert (coder["name"], coder["contextWindow"], coder["maxOutputTokens"]) == ("Team Coder", 400_000, 32_000)
    assert (coder["hostPricing"]["inputCost"], coder["hostPricing"]["outputCost"]) == (200, 800)
    assert coder["capabilities"] == {"toolCalling": True, "imageInput": True}
    assert "A virtual model" in coder["tooltip"] and "unknown" not in coder["tooltip"]
    assert coder["detail"] == "virtual · 400K · $2.00/$8.00"
    # Where it says nothing: each gap named, with the default it is counted with.
    quiet = listed["vmc/quiet"]
    assert quiet["contextWindow"] == DEFAULT_CONTEXT_WINDOW and quiet["hostPricing"] is None
    tip = quiet["tooltip"]
    assert "Context window unknown: the gateway does not say; counted as 128K tokens, up to 16K out" in tip
    assert "Prices unknown: the gateway does not say" in tip
    assert "Tool support unknown: the gateway does not say; agent tools are sent" in tip
    assert quiet["detail"] == "virtual · window unknown"
    assert quiet["capabilities"]["toolCalling"] is True and quiet["warning"] is None
    # Requested by its id, as the gateway addresses it.
    assert sent["model"] == "vmc/quiet"
    # What is not a virtual model's id is dropped with one message, the rest kept; a repeat offered once.
    assert [m for m in listed if m.startswith("vmc/")] == ["vmc/team-coder", "vmc/quiet"]
    assert list(listed).count("fake/text") == 1
    shown = [text for _, text in side.logs if text.startswith("shown:") and "virtualModels" in text]
    assert len(shown) == 1 and "'vmc/../etc' is not a virtual model id" in shown[0], shown
    assert "'fake/text' is not a virtual model id" in shown[0]
    silent = [text for _, text in side.logs if "says nothing of the virtual model vmc/quiet" in text]
    assert len(silent) == 1, silent
    reads = [lookup["path"] for lookup in gateway.gateway.lookups if "vmc/" in lookup["path"]]
    assert sorted(set(reads)) == ["/models/vmc/quiet", "/models/vmc/team-coder"]


async def test_a_listed_virtual_model_is_the_lists_and_a_read_that_hangs_does_not_hold_the_list(
    gateway: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GATEWAY_VIRTUAL", "1")
    side = Sidecar()
    settings = {"maxRetries": 0, "virtualModels": ["vmc/team-coder", "vmc/slow"]}
    await side.start(gateway.base_url + "/virtual-listed/v1", settings, load_tokenizer=False)
    try:
        started = time.monotonic()
        listed = {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}
        took = time.monotonic() - started
    finally:
        await side.stop()
    # The list's own entry, read once: no second read of an id the list names.
    assert (
        listed["vmc/team-coder"]["contextWindow"] == 400_000
        and "A virtual model" not in listed["vmc/team-coder"]["tooltip"]
    )
    reads = [lookup["path"] for lookup in gateway.gateway.lookups if "vmc/" in lookup["path"]]
    assert reads == ["/models/vmc/slow"]
    # A read that does not answer is given up after its bound, the model offered with the defaults.
    assert VIRTUAL_READ_TIMEOUT <= took < VIRTUAL_READ_TIMEOUT + 10, took
    assert listed["vmc/slow"]["contextWindow"] == DEFAULT_CONTEXT_WINDOW
    assert any(f"no answer in {VIRTUAL_READ_TIMEOUT:g} s" in text for _, text in side.logs)


def user(text: str) -> dict[str, Any]:
    return {"role": 1, "content": [{"type": "text", "value": text}]}


def test_the_setting_is_bounded_and_checked_id_by_id() -> None:
    many = [f"vmc/m{i}" for i in range(MAX_VIRTUAL_MODELS + 5)]
    kept, dropped = valid_virtual_models([*many, many[0]])
    assert kept == many[:MAX_VIRTUAL_MODELS] and dropped == [f"at most {MAX_VIRTUAL_MODELS} virtual models: 5 left out"]
    for bad in ["vmc/", "vmc/a/b", "vmc/-x", "VMC/x", "vmc/x y", "vmc/[link](x)", "vmc/" + "a" * 101, 7, None]:
        kept, dropped = valid_virtual_models([bad, "vmc/ok"])
        assert kept == ["vmc/ok"] and len(dropped) == 1 and "is not a virtual model id" in dropped[0], bad
    assert valid_virtual_models("vmc/x") == ([], ["must be a list of ids like vmc/my-model"])


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "not json",
        {"id": "vmc/other", "context_window": 400_000},  # another model's entry says nothing of this one
        {"id": "vmc/x", "context_window": math.nan, "max_tokens": -1, "pricing": {"input": "NaN"}, "tags": "x"},
        {"id": "vmc/x", "name": {"nested": 1}, "released": "[link](http://evil)"},
    ],
)
def test_an_answer_that_says_nothing_readable_leaves_the_defaults_and_names_them(answer: Any) -> None:
    model = virtual_model("vmc/x", answer, 16_384)
    assert (model.id, model.name, model.contextWindow, model.pricing.input) == ("vmc/x", "vmc/x", 128_000, None)
    assert model.unstated == ["window", "prices", "tools"] and model.capabilities.toolCalling


def test_the_entry_is_found_where_a_gateway_may_put_it() -> None:
    entry = {"id": "vmc/x", "context_window": 1}
    for answer in (entry, {"data": entry}, {"object": "list", "data": [{"id": "vmc/y"}, entry]}):
        assert entry_in(answer, "vmc/x") is entry
    assert entry_in({"data": "x"}, "vmc/x") is None
