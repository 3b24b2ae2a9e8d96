"""A JSON-RPC client for the real sidecar subprocess (pygls' LanguageClient), used by the tests."""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from gateway_lm.rpc.params import plain_params_converter

_ids = itertools.count(1000)


class Sidecar:
    def __init__(self) -> None:
        self.client = LanguageClient("tests", "1", converter_factory=plain_params_converter)
        self.parts: dict[Any, list[dict[str, Any]]] = {}
        self.part_arrivals: dict[Any, list[float]] = {}
        self.logs: list[tuple[int, str]] = []
        self.billed: list[tuple[float, Any]] = []  # (arrival, params) of each gateway/billed
        self.metrics: list[Any] = []  # params of each gateway/metrics

        @self.client.feature("gateway/parts")
        def on_parts(params: Any) -> None:
            rid = params["requestId"]
            self.parts.setdefault(rid, []).extend(params["parts"])
            self.part_arrivals.setdefault(rid, []).append(asyncio.get_running_loop().time())

        @self.client.feature("gateway/billed")
        def on_billed(params: Any) -> None:
            self.billed.append((asyncio.get_running_loop().time(), params))

        @self.client.feature("gateway/metrics")
        def on_metrics(params: Any) -> None:
            self.metrics.append(params)

        @self.client.feature("window/showMessage")
        def on_show(params: Any) -> None:
            self.logs.append((int(params.type), "shown: " + params.message))

        @self.client.feature("window/logMessage")
        def on_log(params: Any) -> None:
            self.logs.append((int(params.type), params.message))

    async def start(
        self,
        base_url: str,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        load_tokenizer: bool = True,
        stdio: str | None = None,
    ) -> None:
        """`stdio`: the mode `gateway-lm serve --stdio` runs (rpc/pipes.py); None for its default here."""
        mode = ["--stdio", stdio] if stdio else []
        await self.client.start_io(
            sys.executable, "-m", "gateway_lm", "serve", *mode, env={**os.environ, **(env or {})}
        )
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                initialization_options={"baseUrl": base_url, "settings": settings or {}},
            )
        )
        self.client.initialized(types.InitializedParams())
        # As Copilot does before its first chat: the first count waits for the tokenizer to load.
        if load_tokenizer:
            await self.request("gateway/countTokens", {"model": "openai/gpt-5", "texts": [""]})

    async def request(self, method: str, params: Any) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    def start_request(self, method: str, params: Any) -> tuple[str, asyncio.Future[Any]]:
        msg_id = str(next(_ids))
        future = self.client.protocol.send_request(method, params, msg_id=msg_id)
        return msg_id, asyncio.wrap_future(future) if not isinstance(future, asyncio.Future) else future

    def cancel(self, msg_id: str) -> None:
        self.client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 5)
            self.client.exit(None)
        except Exception:
            pass
        await self.client.stop()
