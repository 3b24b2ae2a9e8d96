"""Hostile input from every side (issue 11): the gateway, files on disk, settings, the wire itself.
Each costs the one bad value, never the connection, a start or a secret. The cases run against the
real sidecar subprocess and the loopback fake gateway, and add rows to the reliability table
(tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import math
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter

from conftest import record
from fake_gateway import FakeServer
from gateway_lm.gateway.client import MAX_REPORTED_RETRY_AFTER
from gateway_lm.gateway.errors import CUT, MAX_DETAIL, error_from_response
from gateway_lm.logs import Redactor
from gateway_lm.rpc.methods import build_server
from gateway_lm.settings import Settings, updated_settings
from gateway_lm.tokens.accounting import Accounting
from raw_sidecar import RawSidecar, strict_loads
from sidecar_client import Sidecar

SECRET = "sk-untrusted-canary-5b9e2d7c41"
LONG = "token accounting " * 100  # estimated well over the 50 tokens calibration needs


def chat_params(request_id: str, scenario: str, model: str = "fake/text", **extra: Any) -> dict[str, Any]:
    text = f"[scenario:{scenario}] {LONG}"
    return {
        "requestId": request_id,
        "model": model,
        "messages": [{"role": 1, "content": [{"type": "text", "value": text}]}],
    } | extra


def frames(data: bytes) -> list[bytes]:
    bodies = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        bodies.append(rest[:length])
        data = rest[length:]
    return bodies


# ---- 1. the wire carries valid JSON only ----

HOSTILE_ACCOUNTING = (
    '{"factors": {"fake/text": NaN, "neg": -5, "huge": 1e300, "inf": Infinity, "text": "1.2", "good": 1.25},'
    ' "limits": {"fake/text": 1e999, "neg": -7, "oops": "oops", "good": 200000}}'
)


async def test_numbers_from_disk_and_the_catalogue_reach_the_wire_as_json(gateway: FakeServer, tmp_path: Path) -> None:
    (tmp_path / "accounting.json").write_text(HOSTILE_ACCOUNTING)
    side = RawSidecar()
    await side.start()
    try:
        hostile = gateway.base_url.replace("/v1", "/hostile/v1")
        started = await side.initialize(hostile, {"stateDir": str(tmp_path)})
        await side.request("gateway/countTokens", {"model": "m", "texts": [""]})  # after `initialized`
        calibrations = side.notifications("gateway/calibration")
        record(
            "accounting.json: factors NaN/-5/1e300/Infinity, limit 1e999",
            "starts; the bad factors are dropped (the model list carries the rest)",
            f"started={'result' in started}, sent {calibrations}, {len(side.invalid)} invalid frames",
            "result" in started and calibrations == [] and not side.invalid,
        )
        listed = await side.request("gateway/models", {})
        models = {m["id"]: m for m in listed.get("result", {}).get("models", [])}
        expected = {"hostile/nan-price", "hostile/inf-window", "hostile/nan-window", "hostile/absurd", "fake/text"}
        numbers_ok = (
            models.get("hostile/inf-window", {}).get("contextWindow") == 128000
            and models.get("hostile/absurd", {}).get("pricing", {}).get("output") is None
            and models.get("hostile/nan-price", {}).get("pricing")
            == {**dict.fromkeys(("input", "output", "cacheRead", "cacheWrite")), "tiers": []}
            and models.get("hostile/nan-price", {}).get("hostPricing") is None
            and models.get("fake/text", {}).get("budgetFactor") == 1.0  # its NaN factor was dropped
        )
        record(
            "catalogue: prices NaN/1e400/-1, windows 1e400/NaN/1e300, tags 5, junk entries",
            "bad fields dropped, every model listed, valid JSON",
            f"{sorted(models)}, {len(side.invalid)} invalid frames",
            set(models) == expected and numbers_ok and not side.invalid,
        )
    finally:
        await side.stop()


async def test_retry_after_that_json_cannot_carry(gateway: FakeServer) -> None:
    side = RawSidecar()
    await side.start()
    try:
        await side.initialize(gateway.base_url, {"maxRetries": 0})
        for value, expected in (("inf", None), ("1e999", None), ("nan", None), ("1e300", MAX_REPORTED_RETRY_AFTER)):
            before = len(side.invalid)
            answer = await side.request("gateway/chat", chat_params(value, f"ratelimit-after:{value}"))
            data = answer.get("error", {}).get("data", {})
            after = await side.request("gateway/chat", chat_params(f"{value}-next", "text"))
            record(
                f"429 with retry-after: {value}",
                f"rate_limited, retryAfter {expected}, valid JSON, still serving",
                f"{data.get('kind')}, retryAfter {data.get('retryAfter')}, {len(side.invalid) - before} invalid frames",
                data.get("kind") == "rate_limited"
                and data.get("retryAfter") == expected
                and len(side.invalid) == before
                and "result" in after,
            )
    finally:
        await side.stop()


def test_the_encoder_refuses_what_json_cannot_carry(caplog: pytest.LogCaptureFixture) -> None:
    server, _ = build_server()
    out = io.BytesIO()
    server.protocol.set_writer(StdoutWriter(out))
    with caplog.at_level(logging.ERROR, logger="gateway_lm"):
        server.protocol._send_response("7", result={"factor": float("nan")})
        server.protocol._send_data({"jsonrpc": "2.0", "method": "gateway/calibration", "params": {"factor": math.inf}})
        server.protocol._send_data({"jsonrpc": "2.0", "method": "gateway/calibration", "params": {"factor": 1.5}})
    sent = [strict_loads(body) for body in frames(out.getvalue())]
    error = sent[0].get("error", {}) if sent else {}
    ok = (
        len(sent) == 2
        and sent[0].get("id") == "7"
        and error.get("code") == -32603
        and error.get("data", {}).get("kind") == "internal"
        and sent[1]["params"] == {"factor": 1.5}
        and "gateway/calibration" in caplog.text
    )
    record(
        "a NaN result and an Infinity notification (a bug)",
        "-32603 for the request, the notification dropped and logged, the connection kept",
        f"{[m.get('error', m.get('params')) for m in sent]}",
        ok,
    )


def test_pygls_writes_its_own_answers_and_notifications_through_the_strict_writer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A response pygls makes for a handler, and a notification sent with its public `notify()`,
    both pass the strict check in the writer pygls is given (rpc/wirejson.py)."""
    server, _ = build_server()

    @server.feature("test/nan")
    def nan(params: Any) -> dict[str, float]:
        return {"factor": float("nan")}

    out = io.BytesIO()
    server.protocol.set_writer(StdoutWriter(out))
    with caplog.at_level(logging.ERROR, logger="gateway_lm"):
        request = {"jsonrpc": "2.0", "id": 3, "method": "test/nan", "params": None}
        server.protocol.handle_message(server.protocol.structure_message(request))
        server.protocol.notify("gateway/calibration", {"model": "m", "factor": math.inf})
        server.protocol.notify("gateway/calibration", {"model": "m", "factor": 1.5})
    answer, notification = [strict_loads(body) for body in frames(out.getvalue())]
    assert answer["id"] == 3 and answer["error"]["data"]["kind"] == "internal"
    assert notification["params"] == {"model": "m", "factor": 1.5}
    assert "dropped a gateway/calibration message" in caplog.text


# ---- 2. every file we read is untrusted ----

HOSTILE_FILES = [
    ("null", "null", {}, {}),
    ("a list", "[1, 2]", {}, {}),
    ("truncated", '{"factors": {"a": 1.', {}, {}),
    ("sections of the wrong type", '{"factors": [1.2], "limits": {"m": 5000}}', {}, {"m": 5000}),
    (
        "values out of range or of the wrong type",
        '{"factors": {"nan": NaN, "neg": -5, "huge": 1e300, "str": "1.2", "bool": true, "none": null,'
        ' "ok": 1.2, "low": 0.5, "high": 3.0},'
        ' "limits": {"inf": 1e999, "neg": -7, "str": "oops", "float": 1.5, "bool": true, "huge": 1e12, "ok": 200000}}',
        {"ok": 1.2, "low": 0.5, "high": 3.0},
        {"ok": 200000},
    ),
]


@pytest.mark.parametrize(("label", "text", "factors", "limits"), HOSTILE_FILES)
def test_a_hostile_accounting_file_costs_only_its_bad_entries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, label: str, text: str, factors: Any, limits: Any
) -> None:
    path = tmp_path / "accounting.json"
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="gateway_lm"):
        accounting = Accounting(str(tmp_path))
    loaded = (dict(accounting.factors), dict(accounting.limits))
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    accounting.observe("new/model", 1000, 1100)  # the next save repairs the file
    saved = strict_loads(path.read_bytes())
    repaired = saved == {"factors": {**factors, "new/model": 1.1}, "limits": limits}
    record(
        f"accounting.json: {label}",
        "valid entries kept, one warning, repaired at the next save",
        f"kept {loaded}, {len(warnings)} warning(s), repaired={repaired}",
        loaded == (factors, limits) and len(warnings) == 1 and repaired,
    )


# ---- 3. two VS Code windows on one storage folder ----


def test_two_windows_keep_what_each_learned(tmp_path: Path) -> None:
    first, second = Accounting(str(tmp_path)), Accounting(str(tmp_path))
    first.observe("shared", 1000, 1500)
    second.observe("shared", 1000, 1100)  # the newer observation of the same model
    first.observe("first/only", 1000, 1300)
    second.learn_limit("second/only", "prompt is too long: 210000 tokens > 200000 maximum")
    saved = strict_loads((tmp_path / "accounting.json").read_bytes())
    expected = {"factors": {"shared": 1.1, "first/only": 1.3}, "limits": {"second/only": 200000}}
    record(
        "two windows save in turn",
        "both windows' entries on disk, newest per model, no temporary file left",
        json.dumps(saved),
        saved == expected and sorted(f.name for f in tmp_path.iterdir()) == ["accounting.json", "accounting.json.lock"],
    )


async def test_two_sidecars_calibrating_at_once(gateway: FakeServer, tmp_path: Path) -> None:
    per_window = 12
    ratios = (1.3, 0.8)
    path = tmp_path / "accounting.json"
    windows = [Sidecar(), Sidecar()]
    heard: list[list[Any]] = [[], []]
    for window, calibrations in zip(windows, heard, strict=True):
        window.client.feature("gateway/calibration")(lambda params, into=calibrations: into.append(params))
    await asyncio.gather(*(w.start(gateway.base_url, {"stateDir": str(tmp_path), "maxRetries": 0}) for w in windows))
    reads = {"whole": 0, "partial": 0}
    stop = threading.Event()

    def read_while_they_write() -> None:
        while not stop.is_set():
            try:
                strict_loads(path.read_bytes())
                reads["whole"] += 1
            except FileNotFoundError:
                pass
            except ValueError:
                reads["partial"] += 1
            stop.wait(0.001)

    reader = threading.Thread(target=read_while_they_write)
    reader.start()
    try:
        await asyncio.gather(
            *(
                window.request(
                    "gateway/chat", chat_params(f"w{i}-{n}", f"calibrate:{ratios[i]}", model=f"window{i}/model{n}")
                )
                for i, window in enumerate(windows)
                for n in range(per_window)
            )
        )
        for _ in range(500):
            if all(len(calibrations) >= per_window for calibrations in heard):
                break
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        reader.join()
        await asyncio.gather(*(w.stop() for w in windows))
    factors = strict_loads(path.read_bytes())["factors"]
    kept = sum(
        factors.get(f"window{i}/model{n}") == pytest.approx(ratios[i], abs=0.02)
        for i in range(2)
        for n in range(per_window)
    )
    failed = [m for w in windows for _, m in w.logs if "could not save" in m]
    record(
        "two sidecars, one stateDir, 24 calibrations at once",
        "no failed save, no partial read, all 24 factors on disk",
        f"{len(failed)} failed saves, {reads['partial']} partial of {sum(reads.values())} reads, {kept} factors kept",
        not failed and reads["partial"] == 0 and kept == 2 * per_window,
    )


SAVER = """
import sys, time
from gateway_lm.tokens.accounting import Accounting
state_dir, window, count, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
accounting = Accounting(state_dir)
while time.time() < start:
    pass
for n in range(count):
    accounting.observe(f"{window}/model{n}", 1000, 1100 + n % 50)
"""


def test_two_processes_saving_at_once_lose_nothing(tmp_path: Path) -> None:
    """Two windows' sidecars, as two processes, each saving a new model 150 times at once through the
    accounting's own save (lock, re-read, merge, replace). Without the lock (Windows had none) a save
    that read the file before the other's rename dropped that entry."""
    count, start = 150, time.time() + 1.0
    savers = [
        subprocess.Popen([sys.executable, "-c", SAVER, str(tmp_path), window, str(count), str(start)])
        for window in ("left", "right")
    ]
    codes = [saver.wait(timeout=50) for saver in savers]
    factors = strict_loads((tmp_path / "accounting.json").read_bytes())["factors"]
    kept = {window: sum(f"{window}/model{n}" in factors for n in range(count)) for window in ("left", "right")}
    record(
        "two processes merge 150 saves each into accounting.json at once",
        "all 300 entries on disk",
        f"exit codes {codes}, kept {kept['left']} + {kept['right']}",
        codes == [0, 0] and kept == {"left": count, "right": count},
    )


# ---- 4. a bad setting costs that setting ----

BAD_SETTINGS: list[tuple[str, Any]] = [
    ("gatewayOrder", "openai"),
    ("maxRetries", 99),
    ("maxRetries", -1),
    ("maxRetries", 2.5),
    ("connectTimeout", 0),
    ("connectTimeout", math.inf),
    ("idleTimeout", math.nan),
    ("idleTimeout", 1e9),
    ("outputReservation", -1),
    ("maxOutputTokens", 0),
    ("baseUrl", "ftp://example.com"),
    ("baseUrl", 5),
    ("logLevel", "loud"),
    ("reasoningEffortByModel", {"m": 5}),
]


@pytest.mark.parametrize(("name", "value"), BAD_SETTINGS)
def test_each_setting_is_validated_alone(name: str, value: Any) -> None:
    previous = Settings(maxRetries=3, idleTimeout=30, gatewayOnly=["openai"])
    new, problems = updated_settings(previous, {name: value, "gatewayModels": ["a/b"]})
    assert list(problems) == [name]
    assert getattr(new, name) == getattr(previous, name)  # the previous value stands
    assert new.gatewayModels == ["a/b"] and new.gatewayOnly == ["openai"]  # the rest apply


def test_null_means_the_default_and_good_values_pass() -> None:
    new, problems = updated_settings(
        Settings(maxRetries=5), {"maxRetries": None, "idleTimeout": "30", "baseUrl": "http://proxy:8080/v1"}
    )
    assert problems == {} and new.maxRetries == 2 and new.idleTimeout == 30.0 and new.baseUrl == "http://proxy:8080/v1"


async def test_a_bad_setting_at_start_costs_only_that_setting(gateway: FakeServer) -> None:
    side = Sidecar()
    bad = {"gatewayOrder": "openai", "maxRetries": 99, "connectTimeout": "fast"}
    try:
        # As the extension sends them: the base URL among the settings, not beside them.
        await side.client.start_io(sys.executable, "-m", "gateway_lm", "serve")
        await side.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                initialization_options={"settings": {"baseUrl": gateway.base_url, "gatewayOnly": ["openai"], **bad}},
            )
        )
        started = True
    except Exception:
        started = False
    try:
        result = await side.request("gateway/chat", chat_params("s1", "text")) if started else None
        body = gateway.gateway.requests[-1]["body"] if gateway.gateway.requests else {}
        if started:  # a later settings change re-sends them: refused again, not shown again
            with pytest.raises(JsonRpcException):
                await side.request("gateway/configure", {"settings": {"baseUrl": gateway.base_url, **bad}})
        shown = [m for _, m in side.logs if m.startswith("shown: ")]
        named = bool(shown) and all(f"vercelAiGateway.{n}" in shown[0] for n in ("routing.order", "maxRetries"))
        record(
            "settings: routing.order 'openai', maxRetries 99, connectTimeout 'fast'",
            "starts; one message naming them (not repeated); base URL and routing.only apply",
            f"started={started}, {len(shown)} message(s), routing {body.get('providerOptions')}",
            started
            and result is not None
            and body.get("providerOptions") == {"gateway": {"only": ["openai"]}}
            and len(shown) == 1
            and named
            and "connectTimeout" in shown[0],
        )
    finally:
        await side.stop()


async def test_configure_with_wrong_types_is_invalid_params(gateway: FakeServer) -> None:
    side = Sidecar()
    await side.start(gateway.base_url, {"maxRetries": 0})
    observed: list[str] = []
    try:
        moved = gateway.base_url.replace("/v1", "/moved/v1")
        for params in (
            {"settings": {"baseUrl": moved, "maxRetries": "many"}},
            {"settings": 5},
            {"baseUrl": 7},
            [1, 2],
        ):
            try:
                await side.request("gateway/configure", params)
                observed.append("ok")
            except JsonRpcException as error:
                observed.append(f"{error.code}{' names it' if 'maxRetries' in error.message else ''}")
        await side.request("gateway/chat", chat_params("moved", "text"))
        applied = gateway.gateway.requests[-1]["path"] == "/moved/v1/responses"
    finally:
        await side.stop()
    record(
        "gateway/configure: maxRetries 'many' beside a new base URL; settings 5; baseUrl 7; params a list",
        "-32602 each, naming the setting; the base URL applies",
        f"{observed}, base URL applied={applied}",
        observed == ["-32602 names it", "-32602", "-32602", "-32602"] and applied,
    )


# ---- 7. keys never leak ----


async def test_an_echoed_key_appears_nowhere_in_the_sidecar(gateway: FakeServer) -> None:
    side = Sidecar()
    await side.start(gateway.base_url, {"logLevel": "debug", "maxRetries": 0}, env={"AI_GATEWAY_API_KEY": ""})
    errors: list[str] = []
    try:
        # The model list first: a chat would teach the sidecar the key.
        echo = gateway.base_url.replace("/v1", "/echo-key/v1")
        await side.request("gateway/configure", {"settings": {"baseUrl": echo}})
        try:
            await side.request("gateway/models", {"apiKey": SECRET})
        except JsonRpcException as error:
            errors.append(error.message)
        await side.request("gateway/configure", {"settings": {"baseUrl": gateway.base_url}})
        for scenario in ("echo-key-401", "echo-key-stream"):
            try:
                await side.request("gateway/chat", chat_params(scenario, scenario, apiKey=SECRET))
            except JsonRpcException as error:
                errors.append(error.message)
        # Malformed messages carrying the key: pygls logs what it cannot handle.
        side.client.protocol._send_data(
            {"jsonrpc": "1.0", "id": 90, "method": "gateway/chat", "params": {"apiKey": SECRET}}
        )
        side.client.protocol._send_data(
            {"jsonrpc": "2.0", "id": 91, "method": "gateway/models", "params": {"apiKey": SECRET}, "extra": 1}
        )
        await side.request("gateway/countTokens", {"model": "m", "texts": [""]})  # both were handled by now
        proc = side.client._server
    finally:
        await side.stop()
    stderr = (await proc.stderr.read()).decode(errors="replace") if proc and proc.stderr else ""  # type: ignore[union-attr]
    logs = "\n".join(m for _, m in side.logs)
    echoed = len(errors) == 3 and all("[redacted]" in e for e in errors)
    leaks = [
        name for name, text in (("errors", "\n".join(errors)), ("logs", logs), ("stderr", stderr)) if SECRET in text
    ]
    record(
        "gateway echoes the key (chat 401, stream error, models 401); malformed messages with the key",
        "echoed and redacted; no key or traceback in errors, logs, stderr",
        f"redacted={echoed}, leaks={leaks or 'none'}, traceback={'Traceback' in logs + stderr}",
        echoed and not leaks and "Traceback" not in logs + stderr,
    )


PROVIDER_KEY = "sk-ant-provider-canary-8f3a"  # a BYOK key in a model's extraBody
HEADER_TOKEN = 'team"token\\canary-77'  # a header value JSON writes as team\"token\\canary-77


async def test_a_provider_key_in_extra_body_and_a_quoted_header_value_appear_nowhere(gateway: FakeServer) -> None:
    """Before: the extraBody key was no secret to the redactor, and a header value reached the log
    whenever it was quoted as JSON (a `"` or `\\` escaped)."""
    options = {
        "fake/*": {
            "extraBody": {"providerOptions": {"gateway": {"byok": {"anthropic": [{"apiKey": PROVIDER_KEY}]}}}},
            "extraHeaders": {"x-team": HEADER_TOKEN},
        }
    }
    side = Sidecar()
    await side.start(gateway.base_url, {"logLevel": "trace", "maxRetries": 0, "modelOptions": options})
    try:
        with pytest.raises(JsonRpcException) as caught:
            await side.request("gateway/chat", chat_params("r1", "echo-request-400"))
    finally:
        await side.stop()
    sent = gateway.gateway.requests[-1]
    assert sent["body"]["providerOptions"]["gateway"]["byok"]["anthropic"][0]["apiKey"] == PROVIDER_KEY
    assert sent["headers"]["x-team"] == HEADER_TOKEN, "both went out"
    message = caught.value.message  # the gateway's words, cut at errors.MAX_DETAIL
    assert "Invalid request" in message and message.count("[redacted]") == 2, message
    quoted = json.dumps(HEADER_TOKEN)[1:-1]
    for text in (message, *(m for _, m in side.logs)):
        assert PROVIDER_KEY not in text and HEADER_TOKEN not in text and quoted not in text, text


@pytest.mark.parametrize("at", [4, 10, len(PROVIDER_KEY) - 1])
def test_a_secret_the_errors_bound_cuts_in_two_is_redacted_too(at: int) -> None:
    # errors.shown cuts the gateway's words at MAX_DETAIL characters; a key quoted across the cut is
    # no longer whole in the text for the redactor to find, and its start would be shown.
    redact = Redactor()
    redact.add(PROVIDER_KEY)
    words = (
        "x " * ((MAX_DETAIL - 1 - at) // 2) + ("y" if (MAX_DETAIL - 1 - at) % 2 else "") + PROVIDER_KEY + " and more"
    )
    error = error_from_response(400, json.dumps({"error": {"message": words}}).encode())
    assert PROVIDER_KEY[:at] + CUT in error.message, error.message
    shown = redact(error.message)
    assert "[redacted]" + CUT in shown and PROVIDER_KEY[:4] not in shown, shown
