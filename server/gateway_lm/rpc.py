"""`gateway-lm serve`: the JSON-RPC sidecar (pygls over stdio). Contract: rfcs/0003-rpc-contract.md."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Coroutine
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from . import __version__
from .accounting import Accounting
from .client import GatewayClient
from .errors import GatewayError
from .logs import ClientLogHandler, Redactor, configure
from .models import ModelInfo, catalogue, input_budget
from .params import (
    INVALID_PARAMS,
    ChatParams,
    ConfigureParams,
    CountParams,
    api_key,
    plain_params_converter,
    rpc_errors,
    sync,
    validated,
)
from .picker import picker_entry
from .pipeline import ChatOutcome, stream_chat
from .protocol import Settings
from .stdio import serve_stdin
from .tokens import count_message, count_request, count_text, encoding, encoding_name_for

log = logging.getLogger("gateway_lm.rpc")
_LSP_LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}


class Sidecar:
    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self.redact = Redactor()
        self.settings = Settings()
        self._client: GatewayClient | None = None  # built by the first apply(): TLS setup costs ~50 ms
        self.models: dict[str, ModelInfo] = {}
        self.accounting = Accounting()
        self._background: set[asyncio.Future[None]] = set()
        self.tokenizer_load: asyncio.Future[Any] | None = None  # started at initialize
        self._chats: set[str | int] = set()  # requestIds of the chats running now

    # ---- setup ----

    def apply(self, settings: dict[str, Any], base_url: str | None = None) -> None:
        merged = {**self.settings.model_dump(), **settings}
        if base_url:
            merged["baseUrl"] = base_url
        new = Settings.model_validate(merged)
        transport_changed = any(
            getattr(new, f) != getattr(self.settings, f)
            for f in ("baseUrl", "connectTimeout", "idleTimeout", "requestTimeout", "maxRetries", "caBundle")
        )
        if new.stateDir != self.settings.stateDir:
            self.accounting = Accounting(new.stateDir)
        self.settings = new
        configure(ClientLogHandler(self.redact, self._log_to_client), new.logLevel)
        if self._client is None or transport_changed:
            # Built here, at initialize, before the tokenizer loads: built later, it would compete
            # with that load for the GIL on the way to the first answer.
            old, self._client = self._client, GatewayClient(new)
            if old is not None:
                self._in_background(old.aclose())  # requests in flight finish on the old one
        log.info("settings applied (base URL %s)", new.baseUrl)

    @property
    def client(self) -> GatewayClient:
        if self._client is None:
            self._client = GatewayClient(self.settings)
        return self._client

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        # A plain dict straight to pygls' writer: `notify()` would first wrap it in an attrs message
        # and have cattrs walk every part, which costs more than the rest of the stream.
        self.server.protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    def _log_to_client(self, level: int, message: str) -> None:
        kind = _LSP_LEVELS.get(level, types.MessageType.Log)
        self.server.window_log_message(types.LogMessageParams(type=kind, message=message))

    # ---- methods ----

    async def models_list(self, params: Any) -> dict[str, Any]:
        raw = await self.client.list_models(api_key(params))
        models = [self._with_learned_limit(m) for m in catalogue(raw, self.settings.outputReservation)]
        self.models = {m.id: m for m in models}
        log.info("%d language models listed", len(models))
        return {"models": [picker_entry(m) for m in models]}

    def _with_learned_limit(self, model: ModelInfo) -> ModelInfo:
        limit = self.accounting.limits.get(model.id)
        if limit is None:
            return model
        budget = input_budget(limit, model.maxOutputTokens, self.settings.outputReservation)
        return model.model_copy(update={"maxInputTokens": min(model.maxInputTokens, budget)})

    async def chat(self, params: Any) -> dict[str, Any]:
        request = validated(ChatParams, params)
        if request.requestId in self._chats:  # their parts would be told apart by requestId alone
            raise JsonRpcException(
                message=f"A chat with requestId {request.requestId!r} is already running; each chat needs its own",
                code=INVALID_PARAMS,
                data={"kind": "bad_request", "status": None, "retryAfter": None},
            )
        self._chats.add(request.requestId)
        try:
            return await self._chat(request)
        finally:
            self._chats.discard(request.requestId)

    async def _chat(self, request: ChatParams) -> dict[str, Any]:
        self.redact.add(request.apiKey)
        known = self.models.get(request.model)
        if known is not None and not known.capabilities.toolCalling and request.tools:
            log.info("tools withheld from %s: the model does not support them", request.model)
            request.tools = []
        outcome = ChatOutcome()
        log.info(
            "chat %s with %s: %d messages, %d tools",
            request.requestId,
            request.model,
            len(request.messages),
            len(request.tools),
        )
        try:
            # One notification per network read: the parts of all events that arrived together,
            # sent at once (no timer, so an idle pipe adds no latency).
            async for parts in stream_chat(request, self.settings, self.client, request.apiKey, outcome):
                self._notify("gateway/parts", {"requestId": request.requestId, "parts": parts})
        except asyncio.CancelledError:
            log.info("chat %s cancelled", request.requestId)  # nothing is sent after this
            raise
        except GatewayError as error:
            if error.kind == "context_overflow":
                self._learn_limit(request.model, error)
            raise
        self._calibrate_later(request.model, outcome)
        log.info("chat %s finished: %s, usage %s", request.requestId, outcome.finish_reason, outcome.usage)
        return {"usage": outcome.usage, "finishReason": outcome.finish_reason, "responseId": outcome.response_id}

    def _learn_limit(self, model: str, error: GatewayError) -> None:
        limit = self.accounting.learn_limit(model, error.message)
        if limit is not None:
            error.message += (
                f" The model's limit is {limit:,} tokens; the model list now says so, and VS Code will"
                " summarise the conversation before it gets that long."
            )

    def _calibrate_later(self, model: str, outcome: ChatOutcome) -> None:
        """Compares our estimate of the request with the reported input tokens, off the answer's path."""
        if outcome.usage is None or outcome.body is None:
            return
        body, reported = outcome.body, outcome.usage["inputTokens"]

        async def calibrate() -> None:
            estimate = await asyncio.to_thread(count_request, body, model)
            factor = self.accounting.observe(model, estimate, reported)
            if factor is not None:
                self.notify_calibration(model, factor)

        self._in_background(calibrate())

    def notify_calibration(self, model: str, factor: float) -> None:
        self._notify("gateway/calibration", {"model": model, "factor": factor})

    async def count_tokens(self, params: Any) -> dict[str, Any]:
        request = validated(CountParams, params)
        if self.tokenizer_load is not None and not self.tokenizer_load.done():
            await asyncio.shield(self.tokenizer_load)  # a cancelled count must not cancel the load
        counts = [
            count_text(request.model, item) if isinstance(item, str) else count_message(request.model, item)
            for item in request.texts
        ]
        return {"counts": counts}

    def configure(self, params: Any) -> dict[str, Any]:
        request = validated(ConfigureParams, params)
        self.apply(request.settings, request.baseUrl)
        return {"ok": True}


def build_server() -> tuple[LanguageServer, Sidecar]:
    server = LanguageServer("ai-gateway-lm", __version__, converter_factory=plain_params_converter)
    sidecar = Sidecar(server)

    @server.feature(types.INITIALIZE)
    def on_initialize(params: types.InitializeParams) -> None:
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        raw_settings = options.get("settings")
        settings: dict[str, Any] = raw_settings if isinstance(raw_settings, dict) else {}
        base_url = options.get("baseUrl") if isinstance(options.get("baseUrl"), str) else None
        sidecar.apply(settings, base_url)
        # Off the path of the first answer; counts wait for it (rfcs/0005-performance.md).
        sidecar.tokenizer_load = asyncio.ensure_future(asyncio.to_thread(encoding, encoding_name_for("")))

    @server.feature(types.INITIALIZED)
    def on_initialized(_: types.InitializedParams) -> None:
        for model, factor in sidecar.accounting.factors.items():  # what earlier sessions learned
            sidecar.notify_calibration(model, factor)

    server.feature("gateway/models")(rpc_errors(sidecar.redact, sidecar.models_list))
    server.feature("gateway/chat")(rpc_errors(sidecar.redact, sidecar.chat))
    server.feature("gateway/countTokens")(rpc_errors(sidecar.redact, sidecar.count_tokens))
    server.feature("gateway/configure")(rpc_errors(sidecar.redact, sync(sidecar.configure)))
    return server, sidecar


def serve() -> None:
    rpc_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the JSON-RPC stream
    configure(logging.StreamHandler(sys.stderr), "info")
    server, _ = build_server()
    try:
        asyncio.run(_serve_stdio(server, rpc_out))
    except (BrokenPipeError, KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]


async def _serve_stdio(server: LanguageServer, rpc_out: BinaryIO) -> None:
    """Our message loop (stdio.py) on an asyncio pipe reader. pygls' own stdin reader hands every read
    to a thread pool, which doubles the cost of each small request (a token count) (rfcs/0005)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(rpc_out))
    await serve_stdin(reader, server.protocol, server._stop_event)  # framing that survives bad input
