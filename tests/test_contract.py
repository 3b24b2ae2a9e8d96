"""The contract (gateway_lm/contract.py, generated into extension/contract.ts) against the real
sidecar's frames: every result, notification and error data it writes fits its schema exactly, and
what the extension sends fits the params. A field added on one side only fails here."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fake_gateway import FakeServer
from gateway_lm import cli
from gateway_lm.contract import METHODS, NOTIFICATIONS, schema
from gateway_lm.rpc.pipes import MODES
from raw_sidecar import RawSidecar

SCHEMA = schema()
LONG = "token accounting " * 100  # estimated well over the 50 tokens calibration needs


def fits(value: Any, ref: str) -> list[str]:
    """Why `value` does not fit the definition `ref` (e.g. `RpcMethods/properties/gateway~1chat`)."""
    validator = Draft202012Validator({"$ref": f"#/$defs/{ref}", "$defs": SCHEMA["$defs"]})
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)]


def method(name: str, side: str) -> str:
    return f"RpcMethods/properties/{name.replace('/', '~1')}/properties/{side}"


def chat(request_id: str, scenario: str, **extra: Any) -> dict[str, Any]:
    text = f"[scenario:{scenario}] {LONG}"
    return {
        "requestId": request_id,
        "model": "fake/text",
        "messages": [{"role": 1, "content": [{"type": "text", "value": text}]}],
    } | extra


def test_the_contract_names_every_method_and_notification() -> None:
    assert set(SCHEMA["$defs"]["RpcMethods"]["properties"]) == set(METHODS)
    assert set(SCHEMA["$defs"]["RpcNotifications"]["properties"]) == set(NOTIFICATIONS)
    assert SCHEMA["$defs"]["ErrorKind"]["enum"] == [
        "auth",
        "forbidden",
        "not_found",
        "rate_limited",
        "context_overflow",
        "bad_request",
        "upstream",
        "network",
        "timeout",
        "protocol",
        "internal",
        "spend_limit",
        "gateway_budget",
        "routing_rule",
    ]


@pytest.mark.parametrize("stdio", MODES)
async def test_what_the_sidecar_writes_fits_the_contract(gateway: FakeServer, tmp_path: Path, stdio: str) -> None:
    side = RawSidecar()
    await side.start(stdio=stdio)
    try:
        await side.initialize(gateway.base_url, {"stateDir": str(tmp_path), "maxRetries": 0})
        sent: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
            ("gateway/countTokens", {"model": "fake/text", "texts": ["hi", chat("x", "text")["messages"][0]]}, {}),
            ("gateway/models", {"apiKey": "sk-contract-test-key"}, {}),
            ("gateway/chat", chat("reasoning", "reasoning", model="fake/reasoning"), {}),
            ("gateway/chat", chat("tools", "tools", model="fake/tools"), {}),
            ("gateway/chat", chat("calibrate", "calibrate:1.3"), {}),
            ("gateway/configure", {"settings": {"logLevel": "debug"}}, {}),
            ("gateway/credits", {"apiKey": "sk-contract-test-key"}, {}),
            ("gateway/credits", {"apiKey": "no-credits"}, {}),
            ("gateway/chat", chat("billed", "billed"), {}),
            ("gateway/usage", {"since": "2026-01-01", "limit": 10}, {}),
        ]
        failing = [
            ("gateway/chat", chat("e401", "error-401"), {"kind": "auth", "status": 401}),
            ("gateway/chat", {"model": 3}, {"kind": "bad_request"}),  # params off the contract
            ("gateway/configure", {"settings": {"maxRetries": "many"}}, {"kind": "bad_request"}),
            ("gateway/usage", {"limit": -1}, {"kind": "bad_request"}),
        ]
        for name, params, _ in [*sent, failing[0]]:
            assert fits(params, method(name, "params")) == [], f"the test sends {name} as the contract says"
        for name, params, _ in sent:
            answer = await side.request(name, params)
            assert "result" in answer, answer
            assert fits(answer["result"], method(name, "result")) == [], name
        for name, params, expected in failing:
            error = (await side.request(name, params))["error"]
            assert fits(error["data"], "ErrorData") == [] and expected.items() <= error["data"].items(), error
        await side.request("gateway/configure", {"settings": {"maxRequestCost": 0.001}})
        error = (await side.request("gateway/chat", chat("guarded", "text")))["error"]
        assert fits(error["data"], "ErrorData") == [] and error["data"]["kind"] == "spend_limit", error
        for _ in range(100):  # the billed records follow the results
            if len(side.notifications("gateway/billed")) == 4:
                break
            await asyncio.sleep(0.1)
        for _ in range(100):  # the models' metrics follow the first listing, in the background
            if side.notifications("gateway/metrics"):
                break
            await asyncio.sleep(0.1)
        relisted = (await side.request("gateway/models", {}))["result"]
        assert any(m["metrics"] for m in relisted["models"])
        assert fits(relisted, method("gateway/models", "result")) == []
    finally:
        await side.stop()
    parts = side.notifications("gateway/parts")
    assert {p["type"] for n in parts for p in n["parts"]} == {"text", "thinking", "toolCall", "usage", "finish"}
    calibrations = side.notifications("gateway/calibration")
    assert calibrations, "the calibrate scenario sends a factor"
    billed = side.notifications("gateway/billed")
    assert {n["record"]["billed"] for n in billed} == {True, False}, "one billed chat, three estimated"
    metrics = side.notifications("gateway/metrics")
    assert metrics, "the models' metrics were fetched after the first listing"
    checks = [(n, "PartsNotification") for n in parts] + [(n, "Calibration") for n in calibrations]
    checks += [(n, "MetricsNotification") for n in metrics]
    for notification, ref in [*checks, *((n, "BilledNotification") for n in billed)]:
        assert fits(notification, ref) == [], notification


def test_cli_files_an_internal_error_as_internal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "dispatch", broken)
    assert cli.main(["chat", "--json", "hi"]) == 1
    line = json.loads(capsys.readouterr().out)
    assert line["type"] == "error" and line["kind"] == "internal", line
    assert fits({"kind": line["kind"], "status": line["status"], "retryAfter": None}, "ErrorData") == []
