"""Spend through the real sidecar subprocess against the fake gateway (rfcs/0006-spend.md): the billed
cost after each chat, the spend guard before it, routing options in the body, credits and usage."""

from __future__ import annotations

import asyncio
import datetime
import os
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

import fake_spend
from fake_gateway import FakeServer
from gateway_lm.gateway.client import APP_REFERER, APP_TITLE
from gateway_lm.money import usd
from gateway_lm.pipeline import rewritten_by_rule
from gateway_lm.spend.history import DB_NAME, UsageStore
from gateway_lm.spend.prices import EXPECTED_OUTPUT_TOKENS
from sidecar_client import Sidecar

# fake/text: $3 in, $15 out, $0.30 cached per million; the fake's usage: 42 in (10 cached), 7 out.
ESTIMATE = ((42 - 10) * 3 + 10 * 0.3 + 7 * 15) / 1e6
GUARD_OUTPUT = EXPECTED_OUTPUT_TOKENS * 15 / 1e6  # the expected output of a fake/text request


def chat(request_id: str, scenario: str = "text", model: str = "fake/text", **extra: Any) -> dict[str, Any]:
    text = f"[scenario:{scenario}] hi"
    return {
        "requestId": request_id,
        "model": model,
        "messages": [{"role": 1, "content": [{"type": "text", "value": text}]}],
        **extra,
    }


@pytest.fixture
async def sidecar(gateway: FakeServer, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Sidecar]:
    settings = {"stateDir": str(tmp_path), "logLevel": "debug", **getattr(request, "param", {})}
    side = Sidecar()
    await side.start(gateway.base_url, settings)
    await side.request("gateway/models", {})  # the prices the estimates use
    yield side
    await side.stop()


async def billed_for(side: Sidecar, request_id: str, timeout: float = 10) -> tuple[float, dict[str, Any]]:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        for arrival, params in side.billed:
            if params["requestId"] == request_id:
                return arrival, params["record"]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no gateway/billed for {request_id}")


def lookups(gateway: FakeServer) -> list[dict[str, Any]]:
    return [entry for entry in gateway.gateway.lookups if entry["path"] == "generation"]


async def test_billed_cost_and_provider_follow_the_result(sidecar: Sidecar, gateway: FakeServer) -> None:
    result = await sidecar.request("gateway/chat", chat("b1", "billed"))
    answered = asyncio.get_running_loop().time()
    arrival, record = await billed_for(sidecar, "b1")
    assert arrival > answered, "the result never waits for the lookup"
    assert record["billed"] is True and record["cost"] == fake_spend.TOTAL_COST
    assert record["provider"] == fake_spend.PROVIDER and record["byok"] is False
    assert record["id"] == result["responseId"] and record["id"].startswith("gen_")
    assert (record["inputTokens"], record["cachedTokens"], record["cacheWriteTokens"]) == (42, 10, 5)
    stored = (await sidecar.request("gateway/usage", {}))["records"]
    assert stored == [record], "the history holds the billed record, once"


async def test_a_lookup_not_ready_is_retried_until_billed(sidecar: Sidecar, gateway: FakeServer) -> None:
    await sidecar.request("gateway/chat", chat("b2", "billed-after:2"))
    _, record = await billed_for(sidecar, "b2")
    assert record["billed"] is True and record["cost"] == fake_spend.TOTAL_COST
    assert [entry["status"] for entry in lookups(gateway)] == [404, 404, 200]


async def test_a_lookup_that_never_lands_keeps_the_estimate(sidecar: Sidecar, gateway: FakeServer) -> None:
    await sidecar.request("gateway/chat", chat("b3", "billed-never"))
    _, record = await billed_for(sidecar, "b3")
    assert record["billed"] is False and record["cost"] == pytest.approx(ESTIMATE)
    assert record["provider"] is None and record["byok"] is None
    assert [entry["status"] for entry in lookups(gateway)] == [404] * 4
    assert (await sidecar.request("gateway/usage", {}))["records"] == [record]


async def test_the_generation_id_in_provider_metadata_is_looked_up(sidecar: Sidecar, gateway: FakeServer) -> None:
    result = await sidecar.request("gateway/chat", chat("b4", "billed-meta"))
    _, record = await billed_for(sidecar, "b4")
    assert result["responseId"] == "resp_meta_1" and record["billed"] is True
    assert [entry["id"] for entry in lookups(gateway)] == ["gen_" + "0" * 25 + "1"]


async def test_an_id_that_is_not_the_gateways_is_tried_once(sidecar: Sidecar, gateway: FakeServer) -> None:
    await sidecar.request("gateway/chat", chat("b5", "text"))
    _, record = await billed_for(sidecar, "b5")
    assert record["billed"] is False and record["id"] == "resp_fake_1"
    assert [(entry["id"], entry["status"]) for entry in lookups(gateway)] == [("resp_fake_1", 404)]


@pytest.mark.parametrize("sidecar", [{"maxRequestCost": 0.01}], indirect=True)
async def test_the_guard_refuses_before_sending_and_an_approval_lets_it_through(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    with pytest.raises(JsonRpcException) as refused:
        await sidecar.request("gateway/chat", chat("g1"))
    data = refused.value.data
    assert data["kind"] == "spend_limit" and data["scope"] == "request" and data["limit"] == 0.01
    assert GUARD_OUTPUT < data["estimate"] < GUARD_OUTPUT + 100 * 3 / 1e6  # a short message's input
    assert refused.value.message == f"This request will cost about {usd(data['estimate'])} (your limit is $0.01)."
    assert gateway.gateway.requests == [], "nothing reached the gateway"
    result = await sidecar.request("gateway/chat", chat("g2", approvedCost=data["estimate"]))
    assert result["finishReason"] == "stop" and len(gateway.gateway.requests) == 1


@pytest.mark.parametrize("sidecar", [{"maxDailyCost": 5.0}], indirect=True)
async def test_the_day_limit_counts_what_every_window_spent_today(
    sidecar: Sidecar, gateway: FakeServer, tmp_path: Path
) -> None:
    spent_elsewhere(tmp_path, 4.99, ("old", record_at("2001-01-01T00:00:00Z", 100.0)))  # another day's
    with pytest.raises(JsonRpcException) as refused:
        await sidecar.request("gateway/chat", chat("d1"))
    data = refused.value.data
    assert data["kind"] == "spend_limit" and data["scope"] == "day" and data["spentToday"] == pytest.approx(4.99)
    expected = f"This request would bring today's spend to about {usd(4.99 + data['estimate'])}"
    assert refused.value.message == f"{expected} (your daily limit is $5.00)."
    assert gateway.gateway.requests == []
    assert (await sidecar.request("gateway/usage", {}))["dayTotal"] == pytest.approx(4.99)


@pytest.mark.parametrize("sidecar", [{"maxRequestCost": 0.0}], indirect=True)
async def test_a_model_without_prices_asks_and_an_approval_lets_it_through(
    sidecar: Sidecar, gateway: FakeServer
) -> None:
    with pytest.raises(JsonRpcException) as refused:
        await sidecar.request("gateway/chat", chat("p0", model="fake/plain"))
    data = refused.value.data
    assert data["kind"] == "spend_limit" and data["scope"] == "unpriced"
    assert data["estimate"] is None and data["limit"] == 0.0
    assert "gives fake/plain no price" in refused.value.message
    assert gateway.gateway.requests == [], "a limit is set and the cost is unknown: nothing was sent"
    for n in range(1, 3):
        await sidecar.request("gateway/chat", chat(f"p{n}", model="fake/plain", approvedUnpriced=True))
    assert len(gateway.gateway.requests) == 2
    assert sum("fake/plain has no price" in message for _, message in sidecar.logs) == 1, "said once"


async def fresh_sidecar(gateway: FakeServer, tmp_path: Path, **settings: Any) -> Sidecar:
    """A sidecar as after Restart Server or a crash: it has not listed the models (VS Code lists
    them once per window, so the new process is never asked)."""
    side = Sidecar()
    await side.start(gateway.base_url, {"stateDir": str(tmp_path), "logLevel": "debug", **settings})
    return side


async def test_after_a_restart_the_request_limit_holds(gateway: FakeServer, tmp_path: Path) -> None:
    side = await fresh_sidecar(gateway, tmp_path, maxRequestCost=0.000001)
    try:
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", chat("restart-1"))
        data = refused.value.data
        assert data["scope"] == "request" and data["estimate"] > GUARD_OUTPUT, "priced from the list it fetched"
        assert gateway.gateway.requests == []
        await side.request("gateway/chat", chat("restart-1b", approvedCost=1.0))
        listed = [entry for entry in gateway.gateway.lookups if entry["path"] == "models"]
        assert len(listed) == 1, "listed once, for the first guarded chat"
    finally:
        await side.stop()


async def test_after_a_restart_whose_list_fails_the_limit_asks(gateway: FakeServer, tmp_path: Path) -> None:
    side = await fresh_sidecar(gateway, tmp_path, maxRequestCost=100.0)
    try:
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", chat("restart-2", apiKey="models-500"))
        assert refused.value.data["scope"] == "unpriced", "no list, no price: asked, not passed"
        assert gateway.gateway.requests == []
    finally:
        await side.stop()


@pytest.mark.parametrize("sidecar", [{"maxRequestCost": 0.01, "maxDailyCost": 5.0}], indirect=True)
async def test_a_request_approval_does_not_lift_the_day_limit(
    sidecar: Sidecar, gateway: FakeServer, tmp_path: Path
) -> None:
    spent_elsewhere(tmp_path, 4.999)
    with pytest.raises(JsonRpcException) as refused:
        await sidecar.request("gateway/chat", chat("a1", approvedCost=1.0))
    assert refused.value.data["scope"] == "day", "the day limit bounds the total whatever was approved"
    assert gateway.gateway.requests == []
    await sidecar.request("gateway/chat", chat("a2", approvedCost=1.0, approvedDay=True))
    assert len(gateway.gateway.requests) == 1
    with pytest.raises(JsonRpcException):
        await sidecar.request("gateway/chat", chat("a3", approvedCost=1.0))  # the next asks again
    assert len(gateway.gateway.requests) == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("damage", ["garbage", "directory", "fifo", "/dev/zero", "fifo-shm"])
async def test_the_day_limit_holds_when_the_history_cannot_be_used(
    gateway: FakeServer, tmp_path: Path, damage: str
) -> None:
    # A FIFO would block a read for good and a link to /dev/zero would grow memory, were they read
    # as files: SQLite refuses both (and a FIFO as its shared-memory index) at open, in bounded time.
    if sys.platform == "win32" and damage.startswith(("fifo", "/dev/")):
        pytest.skip("a FIFO and /dev/zero are POSIX's")
    if damage == "garbage":
        (tmp_path / DB_NAME).write_bytes(b"not a database " * 200)
    elif damage == "directory":
        (tmp_path / DB_NAME).mkdir()
    elif damage == "fifo":
        os.mkfifo(tmp_path / DB_NAME)
    elif damage == "fifo-shm":
        os.mkfifo(tmp_path / f"{DB_NAME}-shm")
    else:
        (tmp_path / DB_NAME).symlink_to(damage)
    side = await fresh_sidecar(gateway, tmp_path, maxDailyCost=0.10)
    try:
        await side.request("gateway/models", {})
        for n in range(3):
            with pytest.raises(JsonRpcException) as refused:
                await side.request("gateway/chat", chat(f"h{n}"))
            data = refused.value.data
            assert data["scope"] == "day" and data["spentToday"] is None
            assert refused.value.message.startswith("Today's spend cannot be read (the usage history ")
            assert "your daily limit of $0.10 cannot be checked" in refused.value.message
        assert gateway.gateway.requests == [], "never '0 spent today'"
        await side.request("gateway/chat", chat("h-approved", approvedDay=True))
        assert len(gateway.gateway.requests) == 1
        shown = [message for _, message in side.logs if message.startswith("shown: ")]
        assert len(shown) == 1 and "usage history" in shown[0], "the user is told once"
        usage = await side.request("gateway/usage", {})
        assert usage["problem"] and usage["problem"].startswith("the usage history ") and usage["dayTotal"] is None
    finally:
        await side.stop()


@pytest.mark.timeout(60)
async def test_the_first_chat_after_a_lock_at_start_is_released_goes_out(gateway: FakeServer, tmp_path: Path) -> None:
    UsageStore(tmp_path / DB_NAME, None).close()  # a history in WAL, as a window leaves it
    # Another program holds it whole (readers too): the sidecar cannot open it as it starts.
    locker = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None, timeout=0)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    locker.execute("DELETE FROM usage WHERE 0")
    side = await fresh_sidecar(gateway, tmp_path, maxDailyCost=5.0)
    try:
        await side.request("gateway/models", {})
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", chat("x1"))
        assert refused.value.data["scope"] == "day", "the day limit fails closed while it is locked"
        locker.execute("ROLLBACK")
        locker.close()
        await side.request("gateway/chat", chat("x2"))  # the first chat after the lock goes out
        assert len(gateway.gateway.requests) == 1
    finally:
        locker.close()  # a second close does nothing
        await side.stop()


async def test_a_lock_taken_mid_session_neither_delays_a_chat_nor_loses_records(
    gateway: FakeServer, tmp_path: Path
) -> None:
    side = await fresh_sidecar(gateway, tmp_path, maxDailyCost=5.0)
    try:
        await side.request("gateway/models", {})
        await side.request("gateway/chat", chat("l1", "billed"))
        await billed_for(side, "l1")
        # Another program holds the write lock: in WAL, readers go on; writers wait (busy_timeout) and fail.
        locker = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None, timeout=0)
        locker.execute("BEGIN IMMEDIATE")
        try:
            await side.request("gateway/chat", chat("l2", "billed"))  # its record waits behind the lock
            await asyncio.sleep(0.3)
            started = asyncio.get_running_loop().time()
            await side.request("gateway/chat", chat("l3", "billed"))
            took = asyncio.get_running_loop().time() - started
            assert took < 2.0, f"the guard waited {took:.1f} s behind a write stuck on the lock"
            _, record = await billed_for(side, "l2", timeout=30)
            during = await side.request("gateway/usage", {})
            assert during["problem"] is not None, "the dashboard says why"
            assert record["id"] in {r["id"] for r in during["records"]}, "kept in memory, shown"
            assert during["dayTotal"] is not None
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        await billed_for(side, "l3", timeout=30)
        await side.request("gateway/chat", chat("l4", "billed"))  # the next write takes what waited along
        await billed_for(side, "l4")
        after = await side.request("gateway/usage", {})
        assert after["problem"] is None
        stored = UsageStore(tmp_path / DB_NAME, None).records()
        assert len(stored) == 4 and all(r["billed"] for r in stored), "every record reached the history, once"
    finally:
        await side.stop()


ROUTING = {
    "gatewayOrder": ["bedrock"],
    "gatewaySort": "cost",
    "zeroDataRetention": True,
    "disallowPromptTraining": True,
    "serviceTier": "flex",
    "caching": "auto",
    "attributionUser": "dev-1",
    "attributionTags": ["workspace:demo", "team:ai"],
}


@pytest.mark.parametrize("sidecar", [ROUTING], indirect=True)
async def test_routing_privacy_and_attribution_reach_the_body(sidecar: Sidecar, gateway: FakeServer) -> None:
    await sidecar.request("gateway/chat", chat("r1"))
    entry = gateway.gateway.requests[0]
    assert entry["providerOptions"] == {
        "gateway": {
            "order": ["bedrock"],
            "sort": "cost",
            "zeroDataRetention": True,
            "disallowPromptTraining": True,
            "user": "dev-1",
            "tags": ["workspace:demo", "team:ai"],
        }
    }
    assert entry["body"]["caching"] == "auto"  # top-level on /v1/responses, not a gateway option (rfcs/0011)
    # routing.serviceTier goes only to a model whose provider takes tiers (test_speed.py), not fake/…
    assert entry["headers"]["http-referer"] == APP_REFERER and entry["headers"]["x-title"] == APP_TITLE


async def test_defaults_send_no_options_but_the_attribution_headers(sidecar: Sidecar, gateway: FakeServer) -> None:
    await sidecar.request("gateway/chat", chat("r2"))
    entry = gateway.gateway.requests[0]
    assert "providerOptions" not in entry["body"]
    assert entry["headers"]["http-referer"] == APP_REFERER and entry["headers"]["x-title"] == APP_TITLE


async def test_credits_read_quietly(sidecar: Sidecar) -> None:
    assert await sidecar.request("gateway/credits", {}) == {"balance": 95.5, "totalUsed": 4.5}
    for key in ("no-credits", "credits-hostile"):
        assert await sidecar.request("gateway/credits", {"apiKey": key}) == {"balance": None, "totalUsed": None}
    with pytest.raises(JsonRpcException) as failed:
        await sidecar.request("gateway/credits", {"apiKey": "credits-500"})
    assert failed.value.data["kind"] == "upstream"


async def test_models_and_credits_check_their_key_alike(sidecar: Sidecar) -> None:
    """One params model (KeyParams) for both methods: a key that is not a string is the caller's
    mistake, told as such, on either; the sidecar goes on serving."""
    for method in ("gateway/models", "gateway/credits"):
        with pytest.raises(JsonRpcException) as failed:
            await sidecar.request(method, {"apiKey": 42})
        assert (failed.value.code, failed.value.data["kind"]) == (-32602, "bad_request"), method
        assert "apiKey" in str(failed.value), method
    assert await sidecar.request("gateway/credits", {}) == {"balance": 95.5, "totalUsed": 4.5}


async def test_usage_reads_a_date_range_and_bounds_its_params(sidecar: Sidecar, tmp_path: Path) -> None:
    other_window = UsageStore(tmp_path / DB_NAME, None)
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):
        other_window.put(day, record_at(f"{day}T12:00:00.000Z", 0.5))
    other_window.close()
    answer = await sidecar.request("gateway/usage", {"since": "2026-01-02", "until": "2026-01-02"})
    assert [r["time"][:10] for r in answer["records"]] == ["2026-01-02"]
    answer = await sidecar.request("gateway/usage", {"since": "2026-01-01", "limit": 2})
    assert [r["time"][:10] for r in answer["records"]] == ["2026-01-03", "2026-01-02"], "newest first"
    for bad in ({"limit": 0}, {"limit": 50_001}, {"since": "yesterday"}):
        with pytest.raises(JsonRpcException) as refused:
            await sidecar.request("gateway/usage", bad)
        assert refused.value.data["kind"] == "bad_request"


def spent_elsewhere(state_dir: Path, usd: float, *more: tuple[str, Any]) -> None:
    """Today's spend by another window (and `more` of its records), in the shared history."""
    other_window = UsageStore(state_dir / DB_NAME, 90)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    for key, record in (("w2", record_at(now, usd)), *more):
        other_window.put(key, record)
    other_window.close()


def record_at(time: str, cost: float, group: str | None = None) -> Any:
    return {
        "id": f"gen_{time}",
        "time": time,
        "model": "fake/text",
        "provider": "fakecloud",
        "inputTokens": 1,
        "outputTokens": 1,
        "cachedTokens": 0,
        "cacheWriteTokens": 0,
        "reasoningTokens": 0,
        "cost": cost,
        "billed": True,
        "byok": False,
        "group": group,
        "requestedModel": None,
        "cacheSaved": None,
    }


async def test_without_a_usable_history_chats_still_answer_and_bill(gateway: FakeServer, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    side = Sidecar()
    await side.start(gateway.base_url, {"stateDir": str(blocker)})
    try:
        await side.request("gateway/models", {})
        result = await side.request("gateway/chat", chat("u1", "billed"))
        _, record = await billed_for(side, "u1")
        assert result["finishReason"] == "stop" and record["billed"] is True
        usage = await side.request("gateway/usage", {})
        assert [r["id"] for r in usage["records"]] == [record["id"]], "kept in memory, shown"
        assert usage["problem"] is not None
        assert sum(message.startswith("shown: ") for _, message in side.logs) == 1, "told once"
    finally:
        await side.stop()


# ---- one bound each, everywhere (usage.py's constants, carried to the extension by the contract) ----


async def test_a_billed_cost_under_the_bound_is_kept_as_the_status_bar_shows_it(sidecar: Sidecar) -> None:
    """Before: $5M went to the status bar in gateway/billed, and the history read it as no cost."""
    await sidecar.request("gateway/chat", chat("big", "billed-cost:5000000"))
    _, record = await billed_for(sidecar, "big")
    assert record["billed"] is True and record["cost"] == 5_000_000
    usage = await sidecar.request("gateway/usage", {})
    assert [r["cost"] for r in usage["records"]] == [5_000_000] and usage["dayTotal"] == 5_000_000
    await sidecar.request("gateway/chat", chat("past", "billed-cost:2000000000"))  # past MAX_USD: no reading
    _, record = await billed_for(sidecar, "past")
    assert record["billed"] is False and record["cost"] == pytest.approx(ESTIMATE), "the estimate stands"
    usage = await sidecar.request("gateway/usage", {})
    assert sorted(r["cost"] for r in usage["records"]) == [pytest.approx(ESTIMATE), 5_000_000]


async def test_a_model_id_past_the_bound_is_listed_nowhere_asked_for_never_and_recorded_never(
    gateway: FakeServer, tmp_path: Path
) -> None:
    """Before: listed, sent, and recorded, counted in today's total while the dashboard dropped it."""
    from fake_gateway import LONG_ID_MODEL

    side = Sidecar()
    await side.start(gateway.base_url.replace("/v1", "/hostile-text/v1"), {"stateDir": str(tmp_path)})
    try:
        listed = [m["id"] for m in (await side.request("gateway/models", {}))["models"]]
        assert "fake/text" in listed and LONG_ID_MODEL["id"] not in listed
        with pytest.raises(JsonRpcException) as caught:
            await side.request("gateway/chat", chat("long", model=LONG_ID_MODEL["id"]))
        assert caught.value.data["kind"] == "bad_request" and "at most 200 characters" in caught.value.message
        assert gateway.gateway.requests == [], "nothing was sent"
        usage = await side.request("gateway/usage", {})
        assert usage["records"] == [] and usage["dayTotal"] == 0.0
    finally:
        await side.stop()


# A team routing rule's rewrite (rfcs/0003-rpc-contract.md, "A team's routing rules"): the fake's
# `/rules/` list holds fake/rule-rewrite ($3 in, $15 out per million), which it answers as fake/tools
# ($1 in, $2 out), naming it in the response object. The fake's usage: 42 in (10 cached), 7 out.
SERVED_COST = (42 * 1 + 7 * 2) / 1e6
REQUESTED_COST = (42 * 3 + 7 * 15) / 1e6


async def test_a_routing_rule_rewrite_is_priced_and_recorded_as_the_model_that_answered(
    gateway: FakeServer, tmp_path: Path
) -> None:
    side = Sidecar()
    await side.start(gateway.base_url + "/rules/v1", {"stateDir": str(tmp_path), "maxRetries": 0})
    try:
        await side.request("gateway/models", {})
        result = await side.request("gateway/chat", chat("r1", "rule-rewrite", model="fake/rule-rewrite"))
        assert result["usage"]["servedModel"] == "fake/tools"  # the result's usage, the usage part's too
        _, record = await billed_for(side, "r1")
        assert (record["model"], record["requestedModel"]) == ("fake/tools", "fake/rule-rewrite")
        assert record["billed"] is False and record["cost"] == pytest.approx(SERVED_COST)
        assert record["cost"] != pytest.approx(REQUESTED_COST)
        assert (await side.request("gateway/usage", {}))["records"] == [record], "the history holds it so"
        # The model requested answered (the fake names no listed model): no rewrite, priced as itself.
        result = await side.request("gateway/chat", chat("r2", "text", model="fake/rule-rewrite"))
        assert "servedModel" not in result["usage"]
        _, record = await billed_for(side, "r2")
        assert (record["model"], record["requestedModel"]) == ("fake/rule-rewrite", None)
        assert record["cost"] == pytest.approx(REQUESTED_COST)
    finally:
        await side.stop()


async def test_a_fallback_the_user_set_is_no_routing_rule(gateway: FakeServer, tmp_path: Path) -> None:
    side = Sidecar()
    settings = {"stateDir": str(tmp_path), "maxRetries": 0, "gatewayModels": ["fake/tools"]}
    await side.start(gateway.base_url + "/rules/v1", settings)
    try:
        await side.request("gateway/models", {})
        result = await side.request("gateway/chat", chat("f1", "rule-rewrite", model="fake/rule-rewrite"))
        assert "servedModel" not in result["usage"]
        _, record = await billed_for(side, "f1")
        assert record["requestedModel"] is None and record["model"] == "fake/rule-rewrite"
    finally:
        await side.stop()


def test_a_virtual_model_or_a_fast_tier_answering_is_no_routing_rule() -> None:
    # A virtual model is always served by the model its configuration names; `<id>` and `<id>-fast`
    # are one model at two speeds (rfcs/0003-rpc-contract.md, "A team's routing rules").
    listed = {"anthropic/claude", "anthropic/claude-fast", "openai/gpt", "vmc/team"}
    assert not rewritten_by_rule("vmc/team", {}, listed)("anthropic/claude")
    assert not rewritten_by_rule("anthropic/claude", {}, listed)("anthropic/claude-fast")
    assert not rewritten_by_rule("anthropic/claude-fast", {}, listed)("anthropic/claude")
    assert rewritten_by_rule("anthropic/claude", {}, listed)("openai/gpt"), "another listed model: a rule's rewrite"
