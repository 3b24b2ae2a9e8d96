"""Several keys side by side (rfcs/0010): through the real sidecar and
the fake gateway, each provider group's chat goes out with its own key, its usage record names its
group, the day limit counts a group's own spend, a grouped chat without its key is refused without
falling back to the environment's, and a usage history written before groups keeps counting."""

from __future__ import annotations

import datetime
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fake_gateway import FakeServer
from gateway_lm.spend.history import DB_NAME, UsageStore
from sidecar_client import Sidecar
from test_spend import billed_for, chat, record_at, spent_elsewhere

MINE, TEAM = "3f9a1c2e4b5d", "7c0d9e8f1a2b"
MY_KEY, TEAM_KEY = "vck_mine-0123456789abcdef", "vck_team-fedcba9876543210"


async def start(gateway: FakeServer, tmp_path: Path, env: dict[str, str] | None = None, **settings: Any) -> Sidecar:
    side = Sidecar()
    await side.start(gateway.base_url, {"stateDir": str(tmp_path), **settings}, env=env)
    await side.request("gateway/models", {})
    return side


async def test_each_groups_chat_goes_out_with_its_key_and_is_recorded_as_its(
    gateway: FakeServer, tmp_path: Path
) -> None:
    side = await start(gateway, tmp_path)
    try:
        await side.request("gateway/chat", chat("m1", group=MINE, apiKey=MY_KEY))
        await side.request("gateway/chat", chat("t1", group=TEAM, apiKey=TEAM_KEY))
        await side.request("gateway/chat", chat("d1", apiKey=MY_KEY))  # the default key's list
        sent = [entry["authorization"] for entry in gateway.gateway.requests]
        assert sent == [f"Bearer {MY_KEY}", f"Bearer {TEAM_KEY}", f"Bearer {MY_KEY}"]
        groups = {rid: (await billed_for(side, rid))[1]["group"] for rid in ("m1", "t1", "d1")}
        assert groups == {"m1": MINE, "t1": TEAM, "d1": None}
        records = (await side.request("gateway/usage", {}))["records"]
        assert sorted((r["group"] or "") for r in records) == sorted(["", MINE, TEAM])
    finally:
        await side.stop()


async def test_the_day_limit_counts_a_groups_own_spend(gateway: FakeServer, tmp_path: Path) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    spent_elsewhere(tmp_path, 0.0, ("team", record_at(now, 4.99, TEAM)))  # the team's key spent it
    side = await start(gateway, tmp_path, maxDailyCost=5.0)
    try:
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", chat("t1", group=TEAM, apiKey=TEAM_KEY))
        assert refused.value.data["scope"] == "day" and refused.value.data["spentToday"] == pytest.approx(4.99)
        assert gateway.gateway.requests == []
        await side.request("gateway/chat", chat("m1", group=MINE, apiKey=MY_KEY))  # another key's day
        await side.request("gateway/chat", chat("d1", apiKey=MY_KEY))  # the default key's day
        assert len(gateway.gateway.requests) == 2
        assert (await side.request("gateway/usage", {}))["dayTotal"] == pytest.approx(4.99, abs=0.01), "every key"
    finally:
        await side.stop()


async def test_a_grouped_chat_without_its_key_is_refused_not_sent_with_the_environments(
    gateway: FakeServer, tmp_path: Path
) -> None:
    side = await start(gateway, tmp_path, env={"AI_GATEWAY_API_KEY": "vck_env-000000000000"})
    try:
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", chat("g1", group=MINE))
        assert refused.value.data["kind"] == "auth"
        assert "provider group that is gone" in refused.value.message
        assert "Add Models" in refused.value.message
        assert gateway.gateway.requests == [], "nothing went out, with no key"
        await side.request("gateway/chat", chat("d1"))  # ungrouped: the environment's key, as before
        assert gateway.gateway.requests[0]["authorization"] == "Bearer vck_env-000000000000"
    finally:
        await side.stop()


@pytest.mark.parametrize("bad", ["", "a b", "x" * 65, "../etc", 7])
async def test_a_group_tag_out_of_bounds_is_a_bad_request(gateway: FakeServer, tmp_path: Path, bad: object) -> None:
    side = await start(gateway, tmp_path)
    try:
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", chat("b1", group=bad, apiKey=MY_KEY))
        assert refused.value.data["kind"] == "bad_request"
        assert gateway.gateway.requests == []
    finally:
        await side.stop()


@pytest.mark.parametrize(
    ("key", "named"),
    [
        (MY_KEY + "\r\n", "a line break (U+000D)"),
        ("vck_\x00" + MY_KEY[4:], "a NUL character (U+0000)"),
        (MY_KEY[:-1] + "é", "the character 'é', which is not ASCII (U+00E9)"),
        (MY_KEY + "\u200b", "a character that is not ASCII (U+200B)"),
    ],
)
async def test_a_group_key_no_header_can_carry_is_refused_naming_the_key(
    gateway: FakeServer, tmp_path: Path, key: str, named: str
) -> None:
    side = await start(gateway, tmp_path)
    try:
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", chat("k1", group=MINE, apiKey=key))
        assert refused.value.data["kind"] == "auth", refused.value.message
        assert refused.value.message.startswith("This model's provider group has an API key that is not valid")
        assert named in refused.value.message
        assert "Update API Key" in refused.value.message and MY_KEY[5:] not in refused.value.message
        with pytest.raises(JsonRpcException) as listed:
            await side.request("gateway/credits", {"apiKey": key})
        assert listed.value.data["kind"] == "auth" and named in listed.value.message
        assert gateway.gateway.requests == [], "nothing went out"
    finally:
        await side.stop()


@pytest.mark.parametrize("variable", ["AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN"])
async def test_an_environment_key_no_header_can_carry_is_refused_naming_the_variable(
    gateway: FakeServer, tmp_path: Path, variable: str
) -> None:
    # The key the sidecar takes from its environment (no key in the request), or the extension passes
    # on from it: each refused as a key from the editor is, naming the variable, not "Internal error".
    env = {"AI_GATEWAY_API_KEY": "", "VERCEL_OIDC_TOKEN": "", variable: MY_KEY + "\n"}
    side = Sidecar()
    await side.start(gateway.base_url, {"stateDir": str(tmp_path)}, env=env)
    try:
        for method, params in (
            ("gateway/chat", chat("e1")),
            ("gateway/chat", chat("e2", apiKey=MY_KEY + "\n")),
            ("gateway/models", {}),
            ("gateway/credits", {}),
        ):
            with pytest.raises(JsonRpcException) as refused:
                await side.request(method, params)
            assert refused.value.data["kind"] == "auth", (method, refused.value.message)
            message = refused.value.message
            assert f"The API key in the environment variable {variable} is not valid" in message, message
            assert "a line break (U+000A)" in message and MY_KEY[5:] not in message
        assert gateway.gateway.requests == [], "nothing went out"
    finally:
        await side.stop()


# The table as the release before groups created it (history.py's schema without `grp`).
OLD_SCHEMA = """
CREATE TABLE usage (
    key TEXT PRIMARY KEY, id TEXT NOT NULL, time TEXT NOT NULL, day TEXT NOT NULL, model TEXT NOT NULL,
    provider TEXT, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL,
    cost REAL, billed INTEGER NOT NULL, byok INTEGER
);
CREATE INDEX usage_day ON usage (day);
CREATE INDEX usage_time ON usage (time);
"""


async def test_a_history_from_before_groups_counts_as_the_default_keys(gateway: FakeServer, tmp_path: Path) -> None:
    now = datetime.datetime.now(datetime.timezone.utc)
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.executescript(OLD_SCHEMA)
    db.execute(
        "INSERT INTO usage VALUES ('old', 'gen_old', ?, ?, 'fake/text', 'fakecloud', 1, 1, 0, 0, 0, 4.99, 1, 0)",
        (now.isoformat().replace("+00:00", "Z"), now.strftime("%Y-%m-%d")),
    )
    db.commit()
    db.close()
    side = await start(gateway, tmp_path, maxDailyCost=5.0)
    try:
        with pytest.raises(JsonRpcException) as refused:
            await side.request("gateway/chat", chat("d1", apiKey=MY_KEY))  # the key those rows were spent with
        assert refused.value.data["spentToday"] == pytest.approx(4.99)
        await side.request("gateway/chat", chat("m1", group=MINE, apiKey=MY_KEY))  # a group starts at zero
        await billed_for(side, "m1")
        records = (await side.request("gateway/usage", {}))["records"]
        assert {(r["id"], r["group"]) for r in records} >= {("gen_old", None)}, (
            "the old row reads, as the default key's"
        )
    finally:
        await side.stop()
    # Another window of the old release's schema, opened again: the column is added once, rows kept.
    store = UsageStore(tmp_path / DB_NAME, 90)
    try:
        assert len(store.records()) == 2
    finally:
        store.close()
