"""`gateway-lm` as a user runs it: a subprocess against the fake gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fake_gateway import FakeServer


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "AI_GATEWAY_API_KEY": "cli-key", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "gateway_lm", *args], capture_output=True, text=True, env=full_env, timeout=60
    )


def test_chat_streams_text_to_stdout_and_usage_to_stderr(gateway: FakeServer) -> None:
    run = cli("chat", "--base-url", gateway.base_url, "--model", "fake/reasoning", "--system", "Be kind", "hi")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Hello from the fake gateway.\n"
    assert "Thinking about it." in run.stderr and "usage: input 42 (cached 10)" in run.stderr
    body = gateway.gateway.requests[0]["body"]
    assert body["instructions"] == "Be kind" and body["model"] == "fake/reasoning"


def test_chat_json_prints_parts(gateway: FakeServer) -> None:
    run = cli("chat", "--json", "--base-url", gateway.base_url, "--model", "fake/text", "hi")
    parts = [json.loads(line) for line in run.stdout.splitlines()]
    assert [p["type"] for p in parts] == ["text"] * 6 + ["usage", "finish"]
    assert parts[-1] == {"type": "finish", "reason": "stop", "responseId": "resp_fake_1"}


def test_length_finish_exits_zero(gateway: FakeServer) -> None:
    run = cli("chat", "--base-url", gateway.base_url, "--model", "fake/incomplete", "hi")
    assert run.returncode == 0 and "finish: length" in run.stderr


@pytest.mark.parametrize(
    ("model", "kind"), [("fake/error-401", "auth"), ("fake/error-502", "upstream"), ("fake/noterminal", "protocol")]
)
def test_errors_exit_1_with_one_line_and_an_error_part(gateway: FakeServer, model: str, kind: str) -> None:
    run = cli("chat", "--json", "--max-retries", "0", "--base-url", gateway.base_url, "--model", model, "hi")
    assert run.returncode == 1
    assert run.stderr.startswith(f"error: {kind}: ") and run.stderr.count("\n") == 1
    last = json.loads(run.stdout.splitlines()[-1])
    assert last["type"] == "error" and last["kind"] == kind
    assert "Traceback" not in run.stderr + run.stdout


def test_stall_honours_idle_timeout(gateway: FakeServer) -> None:
    run = cli("chat", "--idle-timeout", "0.3", "--base-url", gateway.base_url, "--model", "fake/stall", "hi")
    assert run.returncode == 1 and run.stderr.startswith("error: timeout: ")
    assert run.stdout.startswith("Partial")


def test_misuse_exits_2() -> None:
    assert cli("chat").returncode == 2
    assert cli("frobnicate").returncode == 2
    assert cli("chat", "--max-retries", "many", "hi").returncode == 2


def test_replay_of_a_missing_file_is_one_clear_line() -> None:
    run = cli("replay", "/nonexistent/stream.sse")
    assert run.returncode == 1 and run.stderr.startswith("error: ") and "Traceback" not in run.stderr


def test_models_lists_language_models(gateway: FakeServer) -> None:
    run = cli("models", "--json", "--base-url", gateway.base_url)
    ids = [json.loads(line)["id"] for line in run.stdout.splitlines()]
    assert run.returncode == 0 and "fake/text" in ids and "fake/embed" not in ids


@pytest.mark.parametrize("as_json", [False, True])
def test_a_lone_surrogate_in_a_model_name_is_printed_replaced(gateway: FakeServer, as_json: bool) -> None:
    url = gateway.base_url.replace("/v1", "/surrogate/v1")
    run = cli("models", *(["--json"] if as_json else []), "--base-url", url)
    assert run.returncode == 0, run.stderr
    lone = [line for line in run.stdout.splitlines() if "fake/lone" in line]
    assert len(lone) == 1 and "Lone \\ud800 Name" in lone[0], run.stdout
    if as_json:
        assert json.loads(lone[0])["name"] == "Lone \ud800 Name"
    assert "fake/text" in run.stdout, "the other models are listed too"


@pytest.mark.parametrize(
    "command",
    [
        ("chat", "--model", "fake/echo-key-401", "hi"),
        ("chat", "--json", "--model", "fake/echo-key-401", "hi"),
        ("chat", "--json", "--model", "fake/echo-key-stream", "hi"),
        ("models", "--json"),
    ],
)
def test_an_echoed_key_never_appears_in_output(gateway: FakeServer, command: tuple[str, ...]) -> None:
    """The fake gateway quotes the key it received (in a 401 body or a stream's error event)."""
    base_url = gateway.base_url.replace("/v1", "/echo-key/v1") if command[0] == "models" else gateway.base_url
    run = cli(
        *command[:1],
        "--base-url",
        base_url,
        *command[1:],
        env={"AI_GATEWAY_API_KEY": "sk-secret-canary-123"},
    )
    assert run.returncode == 1 and "[redacted]" in run.stderr  # the gateway did echo it
    assert "sk-secret-canary-123" not in run.stdout + run.stderr


def test_an_environment_key_with_a_line_break_is_an_auth_error_naming_the_variable(gateway: FakeServer) -> None:
    run = cli("chat", "--base-url", gateway.base_url, "--model", "fake/text", "hi", env={"AI_GATEWAY_API_KEY": "k\n"})
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("error: auth: The API key in the environment variable AI_GATEWAY_API_KEY is not valid")
    assert gateway.gateway.requests == []


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def test_serve_answers_into_a_file_and_exits_cleanly_at_the_end_of_stdin(gateway: FakeServer, tmp_path: Path) -> None:
    """stdout a regular file (a user redirecting it): uvloop would abort the process on a pipe
    transport over a file; the blocking writer is used instead."""
    out = tmp_path / "out"
    init = {"capabilities": {}, "initializationOptions": {"baseUrl": gateway.base_url, "settings": {}}}
    with out.open("wb") as sink:
        run = subprocess.run(
            [sys.executable, "-m", "gateway_lm", "serve"],
            input=_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}),
            stdout=sink,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert run.returncode == 0, run.stderr
    assert b'"id":1' in out.read_bytes().replace(b" ", b"") and b'"result"' in out.read_bytes()


def test_serve_with_stdin_that_is_not_a_pipe_says_so_and_exits() -> None:
    """/dev/null or a file as stdin: asyncio would wait forever and uvloop abort; one line and exit 2."""
    with open(os.devnull, "rb") as nothing:
        run = subprocess.run(
            [sys.executable, "-m", "gateway_lm", "serve"], stdin=nothing, capture_output=True, text=True, timeout=30
        )
    assert run.returncode == 2
    assert (
        run.stderr.strip()
        == "gateway-lm serve: stdin must be a pipe or a terminal (the extension starts it with pipes)"
    )


UNSAFE = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]]  # not \t, \n


def test_a_hostile_gateway_s_text_is_printed_as_text(gateway: FakeServer) -> None:
    """Model names, an error and an answer holding an OSC 52 clipboard write, a screen clear and a
    forged line (fake_gateway.HOSTILE_TEXT): shown, escaped, never obeyed."""
    hostile_url = gateway.base_url.replace("/v1", "/hostile-text/v1")
    run = cli("models", "--base-url", hostile_url)
    assert run.returncode == 0, run.stderr
    assert not [c for c in run.stdout if c in UNSAFE]
    assert all(line.count("\t") == 3 for line in run.stdout.splitlines()), "no forged line or field"
    assert "\\u001b]52;c;aGk=\\u0007\\u001b[2J\\r\\nerror: auth: forged" in run.stdout
    run = cli("chat", "--max-retries", "0", "--base-url", gateway.base_url, "--model", "fake/hostile-text", "hi")
    assert run.returncode == 1 and run.stderr.count("\n") == 1, "one line, not a forged second"
    assert not [c for c in run.stderr.rstrip("\n") if c in UNSAFE]
    assert "\\u001b]52;c;aGk=\\u0007" in run.stderr
    run = cli("chat", "--base-url", gateway.base_url, "--model", "fake/hostile-answer", "hi")
    assert run.returncode == 0, run.stderr
    assert not [c for c in run.stdout if c in UNSAFE and c != "\n"]
    shown = "Hi [Fix it](command:workbench.action.openGlobalKeybindings) $(loading~spin)"
    shown += " \\u001b]52;c;aGk=\\u0007\\u001b[2J\\r\n"
    assert run.stdout == shown + "error: auth: forged\n", "the answer's own line break stays"
    model = "fake/hostile-text"
    run = cli("chat", "--json", "--max-retries", "0", "--base-url", gateway.base_url, "--model", model, "hi")
    assert not [c for c in run.stdout.replace("\n", "") if c in UNSAFE]
    assert "\x1b]52" in json.loads(run.stdout.splitlines()[-1])["message"], "JSON that still says what was sent"
