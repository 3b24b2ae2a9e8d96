"""The real sidecar over its real stdio, read with a strict JSON parser.

pygls' own client reads `NaN` and `Infinity` as Python floats, so a test through it cannot see a
frame that vscode-jsonrpc's `JSON.parse` rejects (and after which the language client shuts the
sidecar down for good). This one parses every frame the way the extension does and keeps the
frames it could not parse.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import sys
from typing import Any


def _reject(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range")
    return number


def strict_loads(body: bytes) -> Any:
    return json.loads(body, parse_constant=_reject, parse_float=_finite)


def frame(message: dict[str, Any] | bytes) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawSidecar:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []  # every frame received, parsed strictly
        self.invalid: list[bytes] = []  # frames the extension could not parse
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self.proc: asyncio.subprocess.Process | None = None
        self._reading: asyncio.Task[None] | None = None

    async def start(self, env: dict[str, str] | None = None, stdio: str | None = None) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway_lm",
            "serve",
            *(["--stdio", stdio] if stdio else []),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self._reading = asyncio.create_task(self._read())

    async def initialize(self, base_url: str, settings: dict[str, Any]) -> dict[str, Any]:
        options = {"baseUrl": base_url, "settings": settings}
        answer = await self.request(
            "initialize", {"processId": None, "capabilities": {}, "initializationOptions": options}
        )
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return answer

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(frame(message))

    async def request(self, method: str, params: Any, timeout: float = 15) -> dict[str, Any]:
        """The whole response message: `result` or `error`."""
        msg_id = next(self._ids)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = answer
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await asyncio.wait_for(answer, timeout)

    def notifications(self, method: str) -> list[Any]:
        return [m.get("params") for m in self.messages if m.get("method") == method]

    def logs(self) -> str:
        methods = ("window/logMessage", "window/showMessage")
        return "\n".join(str(m["params"].get("message")) for m in self.messages if m.get("method") in methods)

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        while True:
            length = 0
            while (line := await stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            body = await stdout.readexactly(length)
            try:
                message = strict_loads(body)
                self.messages.append(message)
            except ValueError:
                self.invalid.append(body)
                message = json.loads(body)  # still answers its request, so the test fails at once
            waiting = self._waiting.pop(message.get("id"), None) if "method" not in message else None
            if waiting is not None and not waiting.done():
                waiting.set_result(message)

    async def stop(self) -> str:
        """Ends the process; returns what it wrote to stderr."""
        assert self.proc is not None
        try:
            await self.request("shutdown", None, timeout=5)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            await asyncio.wait_for(self.proc.wait(), 5)
        except (asyncio.TimeoutError, ConnectionError):
            pass
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        if self._reading is not None:
            self._reading.cancel()
        assert self.proc.stderr is not None
        return (await self.proc.stderr.read()).decode(errors="replace")
