"""The sidecar's stdin framing, byte by byte, over a raw pipe to the real sidecar subprocess, in
each stdio mode (rfcs/0001-architecture.md, "Windows"): `loop`, and `threads`, which Windows runs.

A client bug, a stray write or a truncated message must cost that message, never the connection:
each case below writes bad bytes by hand, then checks that the sidecar still answers the next
request (and answers the bad one when it had an id). Every case adds a row to the reliability table.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from conftest import RELIABILITY_ROWS
from fake_gateway import FakeServer
from gateway_lm.rpc.pipes import MODES, Mode

pytestmark = pytest.mark.asyncio(loop_scope="module")
REPLY_WAIT = 5.0


def record(scenario: str, expected: str, observed: str, ok: bool) -> None:
    RELIABILITY_ROWS.append((f"stdin: {scenario}", expected, observed, ok))
    assert ok, f"{scenario}: expected {expected}, observed {observed}"


def frame(message: Any) -> bytes:
    body = json.dumps(message).encode() if not isinstance(message, bytes) else message
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(msg_id: int | str, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


class RawSidecar:
    """The sidecar with nothing between the test and its stdin: no client library to fix framing."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.replies: dict[Any, dict[str, Any]] = {}
        self.null_id_errors: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()
        self._reading: asyncio.Task[None] | None = None
        self._ids = iter(range(1, 1_000_000))
        self.stderr = tempfile.TemporaryFile()

    async def start(self, base_url: str, mode: Mode) -> None:
        self.mode = mode
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway_lm",
            "serve",
            "--stdio",
            mode,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.stderr,
            limit=1 << 27,
        )
        self._reading = asyncio.create_task(self._read())
        options = {"baseUrl": base_url, "settings": {"maxRetries": 0}}
        await self.call("initialize", {"capabilities": {}, "initializationOptions": options})
        await self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        # As Copilot's first walk does: the tokenizer (~74 MiB) loads now, not during a memory check.
        await self.call("gateway/countTokens", {"model": "openai/gpt-5", "texts": ["warm"]})

    async def send(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    def next_id(self) -> int:
        return next(self._ids)

    async def call(self, method: str, params: Any = None) -> dict[str, Any] | None:
        msg_id = self.next_id()
        await self.send(frame(request(msg_id, method, params)))
        return await self.reply(msg_id)

    async def reply(self, msg_id: Any, wait: float = REPLY_WAIT) -> dict[str, Any] | None:
        """The response to `msg_id`, or None when none came in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while msg_id not in self.replies:
            self._arrived.clear()
            left = deadline - loop.time()
            if left <= 0 or not self.alive:
                return None
            try:
                await asyncio.wait_for(self._arrived.wait(), min(left, 0.2))
            except TimeoutError:
                pass
        return self.replies.pop(msg_id)

    async def answers(self) -> bool:
        reply = await self.call("gateway/configure", {"settings": {}})
        return reply is not None and reply.get("result") == {"ok": True}

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = await out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            message = json.loads(await out.readexactly(length))
            if "id" in message and "method" not in message:
                if message["id"] is None:
                    self.null_id_errors.append(message)
                else:
                    self.replies[message["id"]] = message
                self._arrived.set()

    async def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 3)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self._reading is not None:
            self._reading.cancel()
        self.stderr.close()


@pytest.fixture(scope="module")
def stdio_gateway() -> Any:
    server = FakeServer().start()
    yield server
    server.stop()


@dataclass
class Shared:
    """The module's sidecar for one stdio mode (a list: replaced when a case left it dead)."""

    mode: Mode
    sides: list[RawSidecar] = field(default_factory=list)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=MODES)
async def shared(stdio_gateway: FakeServer, request: pytest.FixtureRequest) -> AsyncIterator[Shared]:
    """The sidecar of one stdio mode: every case runs in each."""
    holder = Shared(request.param)
    yield holder
    for side in holder.sides:
        await side.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def raw(shared: Shared, stdio_gateway: FakeServer) -> RawSidecar:
    """One sidecar for the module, replaced only when an earlier case left it dead or deaf."""
    sides = shared.sides
    if sides and sides[0].alive and await sides[0].answers():
        return sides[0]
    for side in sides:
        await side.stop()
    sides.clear()
    side = RawSidecar()
    await side.start(stdio_gateway.base_url, shared.mode)
    sides.append(side)
    return side


def describe(reply: dict[str, Any] | None) -> str:
    if reply is None:
        return "no reply"
    if "error" in reply:
        kind = (reply["error"].get("data") or {}).get("kind")
        return f"error {reply['error']['code']}" + (f" {kind}" if kind else "")
    return "result"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; uvloop is not installed on Windows")
async def test_the_sidecar_runs_on_uvloop(raw: RawSidecar) -> None:
    """The shipped entry point runs its loop on uvloop where it is installed (rfcs/0005, "The first part");
    `threads` runs asyncio's own, as on Windows, where there is no uvloop."""
    assert raw.proc is not None and await raw.answers()
    if raw.mode == "threads":
        assert "uvloop/loop." not in Path(f"/proc/{raw.proc.pid}/maps").read_text()
        return
    maps = Path(f"/proc/{raw.proc.pid}/maps").read_text()
    assert "uvloop/loop." in maps


async def test_a_request_without_params_is_answered(raw: RawSidecar) -> None:
    models = raw.next_id()
    chat = raw.next_id()
    await raw.send(frame(request(models, "gateway/models")) + frame(request(chat, "gateway/chat")))
    listed, refused = await raw.reply(models), await raw.reply(chat)
    observed = f"models: {describe(listed)}, chat: {describe(refused)}"
    ok = (
        listed is not None
        and len(listed["result"]["models"]) == 6
        and describe(refused) == "error -32602 bad_request"
        and await raw.answers()
    )
    record("request with no params member", "models: result, chat: error -32602 bad_request", observed, ok)


async def test_a_message_nested_too_deeply_gets_an_error(raw: RawSidecar) -> None:
    msg_id = raw.next_id()
    deep = "[" * 5000 + "]" * 5000
    body = f'{{"jsonrpc":"2.0","id":{msg_id},"method":"gateway/countTokens","params":{{"x":{deep}}}}}'
    await raw.send(frame(body.encode()))
    reply = await raw.reply(msg_id)
    ok = describe(reply) == "error -32600 bad_request" and await raw.answers()
    record("message nested 5,000 deep", "error -32600 to its id, still serving", describe(reply), ok)


async def test_a_too_short_content_length_costs_one_message(raw: RawSidecar) -> None:
    msg_id = raw.next_id()
    body = json.dumps(request(msg_id, "gateway/configure", {"settings": {}})).encode()
    await raw.send(b"Content-Length: %d\r\n\r\n" % (len(body) - 10) + body)
    reply = await raw.reply(msg_id)
    ok = describe(reply) == "error -32700 bad_request" and await raw.answers()
    record("Content-Length 10 bytes short", "error -32700 to its id, still serving", describe(reply), ok)


async def test_a_too_long_content_length_costs_one_message(raw: RawSidecar) -> None:
    msg_id = raw.next_id()
    body = json.dumps(request(msg_id, "gateway/configure", {"settings": {}})).encode()
    await raw.send(b"Content-Length: %d\r\n\r\n" % (len(body) + 500) + body)
    reply = await raw.reply(msg_id, wait=0.5)  # the next message shows the length was wrong
    ok = await raw.answers()
    reply = reply or await raw.reply(msg_id, wait=1)
    record(
        "Content-Length 500 bytes long",
        "the next message is answered",
        f"bad one: {describe(reply)}, next answered: {ok}",
        ok and describe(reply) == "error -32700 bad_request",
    )


@pytest.mark.parametrize(
    ("label", "garbage"),
    [
        ("garbage without a newline", b"\x00\xffgarbage{"),
        ("a stray line without a colon", b"hello there\n"),
        ("a stray line with a colon", b"oops: not a header\r\n\r\n"),
        ("a header with no length", b"Content-Length: lots\r\n\r\n{}"),
        ("an empty message", b"Content-Length: 0\r\n\r\n"),
    ],
)
async def test_garbage_between_messages_is_skipped(raw: RawSidecar, label: str, garbage: bytes) -> None:
    await raw.send(garbage)
    ok = await raw.answers()
    record(label, "skipped, the next message is answered", f"answered: {ok}", ok)


@pytest.mark.parametrize(
    ("label", "body", "expected"),
    [
        ("invalid JSON with an id", b'{"jsonrpc":"2.0","id":ID,"method":"gateway/models",', "error -32700 bad_request"),
        ("an array", b"[1, 2, 3]", "null-id error -32600"),
        ("a number", b"42", "null-id error -32600"),
        (
            "NaN in params",
            b'{"jsonrpc":"2.0","id":ID,"method":"gateway/models","params":NaN}',
            "error -32700 bad_request",
        ),
        ("id is an object", b'{"jsonrpc":"2.0","id":{"a":1},"method":"gateway/models"}', "null-id error -32600"),
        ("method is a number", b'{"jsonrpc":"2.0","id":ID,"method":7}', "error -32600 bad_request"),
        ("unknown method", b'{"jsonrpc":"2.0","id":ID,"method":"gateway/nope"}', "error -32601"),
    ],
)
async def test_bad_messages_are_answered_with_an_error(raw: RawSidecar, label: str, body: bytes, expected: str) -> None:
    msg_id = raw.next_id()
    before = len(raw.null_id_errors)
    await raw.send(frame(body.replace(b"ID", str(msg_id).encode())))
    if expected.startswith("null-id"):
        await raw.answers()
        got = raw.null_id_errors[before:]
        observed = f"null-id error {got[0]['error']['code']}" if got else "no reply"
    else:
        observed = describe(await raw.reply(msg_id))
    record(label, f"{expected}, still serving", observed, observed == expected and await raw.answers())


def peak_mib(side: RawSidecar, reset: bool = False) -> float:
    """The process's peak resident memory; `reset` starts a new peak from what it holds now."""
    assert side.proc is not None
    if reset:
        Path(f"/proc/{side.proc.pid}/clear_refs").write_text("5")
    status = Path(f"/proc/{side.proc.pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


async def test_a_65_mib_line_does_not_crash_the_sidecar(raw: RawSidecar) -> None:
    before = peak_mib(raw, reset=True)
    await raw.send(b"x" * (65 << 20) + b"\n")
    ok = raw.alive and await raw.answers()
    grew = peak_mib(raw) - before if raw.alive else float("inf")
    observed = f"answered: {ok}, peak memory +{grew:.0f} MiB"
    record("65 MiB line without a header", "skipped, still serving, peak +< 16 MiB", observed, ok and grew < 16)


async def test_a_body_over_the_cap_is_refused(raw: RawSidecar) -> None:
    msg_id = raw.next_id()
    prefix = b'{"jsonrpc":"2.0","id":%d,"method":"gateway/countTokens","params":{"texts":["' % msg_id
    body = prefix + b"y" * ((64 << 20) + 1 - len(prefix) - 3) + b'"]}'
    before = peak_mib(raw, reset=True)
    await raw.send(frame(body))
    reply = await raw.reply(msg_id, wait=10)
    ok = describe(reply) == "error -32600 bad_request" and "64 MiB" in str(reply) and await raw.answers()
    grew = peak_mib(raw) - before
    observed = f"{describe(reply)}, peak memory +{grew:.0f} MiB"
    record("64 MiB + 1 byte message", "error -32600 naming the cap, not held", observed, ok and grew < 16)


async def test_a_huge_declared_length_resynchronises(raw: RawSidecar) -> None:
    await raw.send(b"Content-Length: 99999999999999\r\n\r\n{")
    ok = await raw.answers()
    record("Content-Length 10^14", "skipped at the next header, still serving", f"answered: {ok}", ok)
