"""Token accounting: calibration, learned limits, summarisation turns (rfcs/0004-token-accounting.md)."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fake_gateway import FakeServer
from gateway_lm.messages import ChatRequest
from gateway_lm.request.body import build_request
from gateway_lm.rpc.pipes import MODES, Mode
from gateway_lm.settings import Settings
from gateway_lm.tokens.accounting import MAX_FACTOR, Accounting, limit_from_message
from gateway_lm.tokens.statefile import REPLACE_ATTEMPTS
from gateway_lm.toolnames import ToolNameMap
from raw_sidecar import RawSidecar
from sidecar_client import Sidecar

SUMMARY_SYSTEM = (
    "Your task is to create a comprehensive, detailed summary of the entire conversation that captures all"
    " essential information needed to seamlessly continue the work without any loss of context."
)


def test_first_observation_sets_the_factor_then_it_is_smoothed(tmp_path: Path) -> None:
    accounting = Accounting(str(tmp_path))
    assert accounting.observe("anthropic/claude", 1000, 1300) == 1.3
    assert accounting.observe("anthropic/claude", 1000, 1100) == pytest.approx(1.2)
    assert accounting.observe("anthropic/claude", 1000, 1200) is None  # unchanged: nothing to tell
    assert Accounting(str(tmp_path)).factor("anthropic/claude") == pytest.approx(1.2)  # survives a restart


def test_factors_are_bounded_and_tiny_requests_ignored(tmp_path: Path) -> None:
    accounting = Accounting(str(tmp_path))
    assert accounting.observe("m", 100, 100_000) == MAX_FACTOR
    assert accounting.observe("n", 10, 40) is None and accounting.factor("n") == 1.0


def test_learned_limits_persist(tmp_path: Path) -> None:
    accounting = Accounting(str(tmp_path))
    assert accounting.learn_limit("m", "prompt is too long: 210000 tokens > 200000 maximum") == 200000
    assert accounting.learn_limit("m", "Input is too long for requested model.") is None
    assert Accounting(str(tmp_path)).limits == {"m": 200000}
    assert (
        limit_from_message(
            "The input token count (1,100,000) exceeds the maximum number of tokens allowed (1,048,576)."
        )
        == 1048576
    )


def test_unreadable_state_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "accounting.json").write_text("{not json")
    assert Accounting(str(tmp_path)).factors == {}


@pytest.mark.skipif(sys.platform == "win32", reason="a FIFO and /dev/zero are POSIX's")
@pytest.mark.timeout(30)
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_special_accounting_file_is_refused_at_once(
    tmp_path: Path, special: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A FIFO would block the sidecar's start for good; a link to /dev/zero would grow its memory.
    path = tmp_path / "accounting.json"
    if special == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(special)
    caplog.set_level(logging.WARNING)
    made: list[Accounting] = []
    start = threading.Thread(target=lambda: made.append(Accounting(str(tmp_path))), daemon=True)
    start.start()
    start.join(10)
    assert made, "the sidecar's accounting did not start within 10 s"
    assert made[0].factors == {}
    refused = [record.getMessage() for record in caplog.records if "not a regular file" in record.getMessage()]
    assert len(refused) == 1, caplog.text


def held_open(times: int | None) -> tuple[Callable[[str, Path], None], list[float]]:
    """os.replace, refused `times` times (None: always) as Windows refuses it while another process
    has the file open: ERROR_SHARING_VIOLATION, which CPython raises as a PermissionError (EACCES).
    Then the real rename. Also returns when each attempt was made."""
    attempts: list[float] = []

    def replace(source: str, target: Path) -> None:
        attempts.append(time.monotonic())
        if times is None or len(attempts) <= times:
            raise PermissionError(errno.EACCES, "The process cannot access the file", str(target))
        os.replace(source, target)

    return replace, attempts


def test_a_rename_refused_while_the_file_is_held_open_is_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another window's sidecar reading accounting.json, an antivirus or the search indexer holds it
    for a moment on Windows; the save waits it out as extension/storage.ts does."""
    replace, attempts = held_open(times=3)
    accounting = Accounting(str(tmp_path), replace=replace)
    caplog.set_level(logging.WARNING)
    assert accounting.observe("m", 1000, 1300) == 1.3
    assert len(attempts) == 4 and "could not save" not in caplog.text
    assert Accounting(str(tmp_path)).factors == {"m": 1.3}, "the factor is on disk"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["accounting.json", "accounting.json.lock"]


def test_a_rename_never_allowed_ends_in_bounded_time_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    replace, attempts = held_open(times=None)
    accounting = Accounting(str(tmp_path), replace=replace)
    caplog.set_level(logging.WARNING)
    started = time.monotonic()
    assert accounting.observe("m", 1000, 1300) == 1.3
    elapsed = time.monotonic() - started
    assert len(attempts) == REPLACE_ATTEMPTS and elapsed < 1.0, f"{len(attempts)} attempts in {elapsed:.2f} s"
    failed = [r.getMessage() for r in caplog.records if r.name.startswith("gateway_lm")]
    assert len(failed) == 1 and failed[0].startswith("could not save"), failed
    assert accounting.factor("m") == 1.3, "what was learned is kept for the next save"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["accounting.json.lock"], "no temporary file is left"
    accounting.close()  # the last save fails the same way: one more line, no exception
    assert len([r for r in caplog.records if r.name.startswith("gateway_lm")]) == 2


def test_a_rename_that_fails_for_another_reason_is_not_retried(tmp_path: Path) -> None:
    (tmp_path / "accounting.json").mkdir()  # a directory where the file goes: waiting does not help
    replace, attempts = held_open(times=0)  # the real rename at once, which fails
    accounting = Accounting(str(tmp_path), replace=replace)
    accounting.observe("m", 1000, 1300)
    assert len(attempts) == 1
    accounting.close()  # its last save fails too: nothing is left for the test run's exit


def calibrating_chat(request_id: str) -> dict[str, Any]:
    text = "[scenario:calibrate:1.3] " + "token accounting " * 100
    return {
        "requestId": request_id,
        "model": "fake/text",
        "messages": [{"role": 1, "content": [{"type": "text", "value": text}]}],
    }


async def calibrate_then_exit(gateway: FakeServer, state: Path, unblock: bool, stdio: Mode) -> str:
    """The real sidecar learns a factor while accounting.json cannot be written (a directory holds
    its place); `unblock` frees it before the sidecar is stopped as the extension stops it (`shutdown`,
    then `exit`), in the stdio mode `stdio` (rpc/pipes.py: `threads`, as on Windows, ends with
    `os._exit`, which runs no exit handler). Returns the sidecar's stderr."""
    (state / "accounting.json").mkdir()
    side = RawSidecar()
    await side.start(stdio=stdio)
    try:
        await side.initialize(gateway.base_url, {"stateDir": str(state), "maxRetries": 0})
        answer = await side.request("gateway/chat", calibrating_chat("c1"))
        assert "result" in answer, answer
        for _ in range(250):
            if side.notifications("gateway/calibration"):
                break
            await asyncio.sleep(0.02)
        assert side.notifications("gateway/calibration"), side.logs()
        assert "could not save" in side.logs(), "the save during the session failed"
        if unblock:
            shutil.rmtree(state / "accounting.json")
    finally:
        stderr = await side.stop()
    return stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stdio", MODES)
async def test_what_a_failed_save_left_is_saved_as_the_sidecar_exits(
    gateway: FakeServer, tmp_path: Path, stdio: Mode
) -> None:
    stderr = await calibrate_then_exit(gateway, tmp_path, unblock=True, stdio=stdio)
    factors = Accounting(str(tmp_path)).factors
    assert factors.get("fake/text") == pytest.approx(1.3, abs=0.01), stderr
    assert "could not save" not in stderr and "Traceback" not in stderr, stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stdio", MODES)
async def test_a_last_save_that_fails_is_one_line_on_stderr(gateway: FakeServer, tmp_path: Path, stdio: Mode) -> None:
    """After `exit` the client's pipe is closed: the line goes to stderr, which the extension shows."""
    stderr = await calibrate_then_exit(gateway, tmp_path, unblock=False, stdio=stdio)
    lines = [line for line in stderr.splitlines() if "could not save" in line]
    assert len(lines) == 1 and "accounting.json" in lines[0], stderr
    assert "Traceback" not in stderr, stderr


def summary_request(system: str | None, last_user: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": 3, "content": [{"type": "text", "value": system}]})
    messages += [
        {"role": 2, "content": [{"type": "toolCall", "callId": "c", "name": "read", "input": {}}]},
        {"role": 1, "content": [{"type": "toolResult", "callId": "c", "content": [{"type": "text", "value": "x"}]}]},
        {"role": 1, "content": [{"type": "text", "value": last_user}]},
    ]
    request = ChatRequest.model_validate(
        {"model": "m", "messages": messages, "tools": [{"name": "read", "description": "", "inputSchema": {}}]}
    )
    return build_request(request, Settings(), ToolNameMap(["read"]))


@pytest.mark.parametrize(
    ("system", "last_user", "choice"),
    [
        (
            SUMMARY_SYSTEM,
            "Summarize the conversation history so far, paying special attention to the most recent",
            "none",
        ),
        (None, "Summarize the conversation history so far.", "none"),
        ("You are an expert AI programming assistant.", "Please summarize this file for me", "auto"),
        (None, "What does the summary function do?", "auto"),
    ],
)
def test_summarisation_turns_may_not_call_tools(system: str | None, last_user: str, choice: str) -> None:
    body = summary_request(system, last_user)
    if choice == "none":  # sent without tools, the history's calls and results as text
        assert "tools" not in body and "tool_choice" not in body
        assert {i["type"] for i in body["input"]} == {"message"}
        texts = [part["text"] for item in body["input"] for part in item["content"]]
        assert "[called the tool read with {}]" in texts
        assert "[the tool read returned]\nx" in texts
    else:
        assert body["tool_choice"] == choice
        assert [t["name"] for t in body["tools"]] == ["read"]


async def test_sidecar_calibrates_persists_and_learns_limits(gateway: FakeServer, tmp_path: Path) -> None:
    side = Sidecar()
    calibrations: list[dict[str, Any]] = []
    side.client.feature("gateway/calibration")(lambda params: calibrations.append(params))
    await side.start(gateway.base_url, {"stateDir": str(tmp_path), "maxRetries": 0})
    try:
        long_text = "token accounting " * 100
        params = {
            "requestId": "c1",
            "model": "fake/text",
            "messages": [{"role": 1, "content": [{"type": "text", "value": f"[scenario:calibrate:1.3] {long_text}"}]}],
        }
        await side.request("gateway/chat", params)
        for _ in range(100):
            if calibrations:
                break
            await asyncio.sleep(0.02)
        assert calibrations and calibrations[0]["model"] == "fake/text"
        assert calibrations[0]["factor"] == pytest.approx(1.3, abs=0.01)
        with pytest.raises(JsonRpcException) as caught:
            await side.request(
                "gateway/chat",
                {
                    **params,
                    "requestId": "c2",
                    "messages": [{"role": 1, "content": [{"type": "text", "value": "[scenario:overflow] hi"}]}],
                },
            )
        assert caught.value.data["kind"] == "context_overflow"
        assert "200,000 tokens" in caught.value.message
        models = {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}
        assert models["fake/text"]["maxInputTokens"] == 200000 - 16384
        assert models["fake/tools"]["maxInputTokens"] == 128000 - 16384
    finally:
        await side.stop()
    again = Sidecar()
    await again.start(gateway.base_url, {"stateDir": str(tmp_path)})
    try:
        # What an earlier session learned shapes the window Copilot budgets with (rfcs/0004).
        models = {m["id"]: m for m in (await again.request("gateway/models", {}))["models"]}
        assert models["fake/text"]["budgetFactor"] == calibrations[0]["factor"]
        assert models["fake/text"]["budgetInputTokens"] == int((200000 - 16384) / calibrations[0]["factor"])
    finally:
        await again.stop()


async def test_an_overflow_at_the_listed_window_does_not_claim_the_list_changed(
    gateway: FakeServer, tmp_path: Path
) -> None:
    """The limit the gateway names is the one the list already shows: the message must not send the user
    looking for a change; a smaller one is learned and said so."""
    side = Sidecar()
    await side.start(gateway.base_url, {"stateDir": str(tmp_path), "maxRetries": 0})
    try:
        await side.request("gateway/models", {})  # fake/text lists a 200,000-token window

        async def overflow(limit: int, request_id: str) -> str:
            text = f"[scenario:overflow:{limit}] hi"
            params = {
                "requestId": request_id,
                "model": "fake/text",
                "messages": [{"role": 1, "content": [{"type": "text", "value": text}]}],
            }
            with pytest.raises(JsonRpcException) as caught:
                await side.request("gateway/chat", params)
            assert caught.value.data["kind"] == "context_overflow"
            return caught.value.message

        same = await overflow(200000, "o1")
        assert "200,000 tokens, as the model list says" in same and "now says so" not in same
        smaller = await overflow(150000, "o2")
        assert "150,000 tokens; the model list now says so" in smaller
        models = {m["id"]: m for m in (await side.request("gateway/models", {}))["models"]}
        assert models["fake/text"]["maxInputTokens"] == 150000 - 16384
    finally:
        await side.stop()
