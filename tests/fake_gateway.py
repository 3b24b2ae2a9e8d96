"""A real HTTP server on 127.0.0.1 that speaks like the Vercel AI Gateway, by scenario.

The scenario is the `x-fake-scenario` header, a `[scenario:NAME]` marker in the last user message,
or the model id (`fake/<scenario>`); `GET …/echo-key/…/models`, `GET …/hostile/…/models`,
`GET …/tokenizer/…/models`, `GET …/surrogate/…/models`, `GET …/efforts/…/models`,
`GET …/agents/…/models` and `GET …/cache/…/models` pick a catalogue answer by the base URL's path;
under `/cache/` a provider's prompt cache bills each answer (fake_cache.py); `GET …/models/metrics`
answers the models' metrics (serve_metrics). Every request is recorded (body, headers, when the
client went away) and served back at `GET /_requests`, so tests in other processes (Node, VS Code)
can assert what reached the gateway.
Credits, generation lookups and the `billed*` scenarios: fake_spend.py; the bench's soak: fake_soak.py.

Run standalone: `python tests/fake_gateway.py [--port N]` prints `PORT <n>` and serves until killed.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import socket
import ssl
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import fake_cache
import fake_spend
from fake_agent import MODEL as AGENT_MODEL
from fake_agent import OVERFLOW_MODEL, serve_agent_loop, serve_overflow_agent
from fake_reasoning import AGENT_MODEL as REASONING_AGENT_MODEL
from fake_reasoning import serve_reasoning_agent, serve_strict_reasoning
from fake_soak import serve_soak

FIXTURES = Path(__file__).parent / "fixtures"
ANSWER = ["Hello", " from", " the", " fake", " gateway", "."]
TITLE = "Picnic plan from the gateway"
USAGE = {
    "input_tokens": 42,
    "output_tokens": 7,
    "total_tokens": 49,
    "input_tokens_details": {"cached_tokens": 10},
    "output_tokens_details": {"reasoning_tokens": 3},
}

TOKENIZER_WINDOW, TOKENIZER_MAX_OUTPUT = 60000, 8192
# Every wait on a client is bounded, so no client (a test's, left open or half-written) holds the
# server: a TLS handshake, one read or write of a request, the request body's size.
HANDSHAKE_TIMEOUT = 10.0
CLIENT_TIMEOUT = 30.0  # no test's client sits longer than this mid-request or with a full window
MAX_REQUEST_BODY = 256 << 20

MODELS = [
    {
        "id": "fake/text",
        "name": "Fake Text",
        "type": "language",
        "owned_by": "fake",
        "context_window": 200000,
        "max_tokens": 32000,
        "tags": ["tool-use", "vision", "reasoning"],
        "pricing": {"input": "0.000003", "output": "0.000015", "input_cache_read": "0.0000003"},
    },
    {
        "id": "fake/tools",
        "name": "Fake Tools",
        "type": "language",
        "owned_by": "fake",
        "context_window": 128000,
        "max_tokens": 16384,
        "tags": ["tool-use"],
        "pricing": {"input": "0.000001", "output": "0.000002"},
    },
    {
        "id": "fake/reasoning",
        "name": "Fake Reasoning",
        "type": "language",
        "owned_by": "fake",
        "context_window": 400000,
        "max_tokens": 128000,
        "tags": ["tool-use", "reasoning"],
        "pricing": {"input": "0.00000125", "output": "0.00001"},
    },
    {
        "id": "fake/plain",
        "name": "Fake Plain (no tools)",
        "type": "language",
        "owned_by": "fake",
        "context_window": 8192,
        "max_tokens": 4096,
        "tags": [],
    },
    {"id": "fake/embed", "name": "Fake Embedding", "type": "embedding", "owned_by": "fake"},
    {  # priced so that one request passes the e2e run's spend limit ($0.25) and no other model's does
        "id": "fake/pricey",
        "name": "Fake Pricey",
        "type": "language",
        "owned_by": "fake",
        "context_window": 200000,
        "max_tokens": 8192,
        "tags": [],
        "pricing": {"input": "0.00005", "output": "0.0001"},
    },
    AGENT_MODEL,
]
# Listed too under a base URL with `/tiers/` in its path, and in the UI run's list (FAKE_GATEWAY_TIERED):
# prices in tiers, as the gateway lists Claude's and Gemini's long contexts (issue 35 §2), every token
# of a request past 200K input tokens at the higher rates.
TIERED_MODEL = {
    "id": "fake/long",
    "name": "Fake Long Context",
    "type": "language",
    "owned_by": "fake",
    "context_window": 1000000,
    "max_tokens": 64000,
    "tags": ["tool-use"],
    "pricing": {
        "input": "0.000003",
        "output": "0.000015",
        "input_cache_read": "0.0000003",
        "input_cache_write": "0.00000375",
        "input_tiers": [{"cost": "0.000003", "min": 0, "max": 200001}, {"cost": "0.000006", "min": 200001}],
        "output_tiers": [{"cost": "0.000015", "min": 0, "max": 200001}, {"cost": "0.0000225", "min": 200001}],
        "input_cache_read_tiers": [
            {"cost": "0.0000003", "min": 0, "max": 200001},
            {"cost": "0.0000006", "min": 200001},
        ],
    },
}

# Listed too under a base URL with `/rules/` in its path, and in the UI run's list (FAKE_GATEWAY_TIERED):
# models a team routing rule acts on (rfcs/0003-rpc-contract.md, "A team's routing rules"). A request
# for `fake/rule-denied` is denied (RULE_REFUSALS); one for `fake/rule-rewrite` is answered by
# RULE_DESTINATION, which the response object names, as a rewrite to another listed model. Priced as
# Fake Text (within the UI run's spend limit, above Fake Tools: no small-task pick) and apart from the
# destination, so a cost tells which model it was priced as.
RULE_DESTINATION = "fake/tools"
RULE_MODELS = [
    {
        "id": f"fake/{name}",
        "name": title,
        "type": "language",
        "owned_by": "fake",
        "context_window": 200000,
        "max_tokens": 8192,
        "tags": ["tool-use"],
        "pricing": {"input": "0.000003", "output": "0.000015"},
    }
    for name, title in (("rule-denied", "Fake Denied by Rule"), ("rule-rewrite", "Fake Rewritten by Rule"))
]
# A team's virtual models (issue 45 §3), not in the list: with FAKE_GATEWAY_VIRTUAL set,
# `GET …/models/vmc/team-coder` answers this entry (the OpenAI-compatible read of one model),
# `…/models/vmc/slow` nothing for 30 s, and any other `vmc/…` a 404, a gateway that says nothing of
# it. Under a base URL with `/virtual-listed/` in its path the list names this entry itself. The UI
# run sets the flag (tests/e2e/ui.mjs).
VIRTUAL_MODEL = {
    "id": "vmc/team-coder",
    "name": "Team Coder",
    "type": "language",
    "owned_by": "acme",
    "context_window": 400000,
    "max_tokens": 32000,
    "tags": ["tool-use", "vision"],
    "pricing": {"input": "0.000002", "output": "0.000008"},
}

# Listed too under a base URL with `/tokenizer/` in its path: the `tokenizer` scenario by model id,
# a provider counting 1.35× o200k that enforces the input limit of this window (window − max output).
TOKENIZER_MODEL = {
    "id": "fake/tokenizer",
    "name": "Fake Tokenizer 1.35x",
    "type": "language",
    "owned_by": "fake",
    "context_window": TOKENIZER_WINDOW,
    "max_tokens": TOKENIZER_MAX_OUTPUT,
    "tags": ["tool-use"],
    "pricing": {"input": "0.000003", "output": "0.000015"},
}

# Listed too under a base URL with `/efforts/` in its path: reasoning models whose levels the catalogue
# states (`reasoning_options`, in two of the shapes effort.py reads), and one whose entry says nothing.
EFFORT_MODELS = [
    {
        "id": "fake/effort-catalogue",
        "name": "Fake Effort (catalogue)",
        "type": "language",
        "owned_by": "fake",
        "context_window": 200000,
        "max_tokens": 32000,
        "tags": ["tool-use", "reasoning"],
        "reasoning_options": {"efforts": ["low", "medium", "high", "xhigh", "ultra"], "default": "high"},
    },
    {
        "id": "fake/effort-list",
        "name": "Fake Effort (list)",
        "type": "language",
        "owned_by": "fake",
        "context_window": 200000,
        "max_tokens": 32000,
        "tags": ["tool-use"],
        "reasoning_options": [{"type": "effort", "values": ["minimal", "high"]}],
    },
    {
        "id": "openai/gpt-5",
        "name": "GPT-5 (fake)",
        "type": "language",
        "owned_by": "openai",
        "context_window": 400000,
        "max_tokens": 128000,
        "tags": ["tool-use", "reasoning"],
    },
]

# Listed too under a base URL with `/efforts/` in its path: models with a fast tier, as the gateway lists
# one, under its own id `<id>-fast` with its own prices (speed.py): a plain model, and gpt-5's.
SPEED_MODELS = [
    {
        "id": "fake/speedy",
        "name": "Fake Speedy",
        "type": "language",
        "owned_by": "fake",
        "context_window": 200000,
        "max_tokens": 8192,
        "tags": ["tool-use"],
        "pricing": {"input": "0.000002", "output": "0.000008"},
    },
    {
        "id": "fake/speedy-fast",
        "name": "Fake Speedy Fast",
        "type": "language",
        "owned_by": "fake",
        "context_window": 200000,
        "max_tokens": 8192,
        "tags": ["tool-use"],
        "pricing": {"input": "0.000012", "output": "0.000048"},
    },
    {
        "id": "openai/gpt-5-fast",
        "name": "GPT-5 Fast (fake)",
        "type": "language",
        "owned_by": "openai",
        "context_window": 400000,
        "max_tokens": 128000,
        "tags": ["tool-use", "reasoning"],
    },
]

# Listed too under a base URL with `/efforts/` in its path, and in the UI run's list (FAKE_GATEWAY_TIERED):
# models whose provider takes the service tiers (offer/speed.py; the gateway's service-tiers page), by
# model id answered with the tier that served them (serve_tiers): one OpenAI model that also takes
# ultrafast, served at the tier asked; and a Google one whose provider serves standard whatever it is asked.
# Priced so that neither trips the UI run's spend limit nor undercuts Fake Tools as the small-task model.
TIER_MODELS = [
    {
        "id": "openai/gpt-6-astra",
        "name": "Fake Tiers (GPT-6 Astra)",
        "type": "language",
        "owned_by": "openai",
        "context_window": 400000,
        "max_tokens": 16384,
        "tags": ["tool-use"],
        "pricing": {"input": "0.0000015", "output": "0.000003", "input_cache_read": "0.00000015"},
    },
    {
        "id": "google/fake-busy",
        "name": "Fake Busy (Google)",
        "type": "language",
        "owned_by": "google",
        "context_window": 200000,
        "max_tokens": 8192,
        "tags": ["tool-use"],
        "pricing": {"input": "0.000002", "output": "0.000004"},
    },
]
TIER_SERVED_DEFAULT = "google/fake-busy"  # asked for any tier, serves the standard one
# What a `cached` scenario reports: a request that read 600 of its 1,000 input tokens from the prompt
# cache and wrote 300 more, as the gateway's Responses usage says it (tests/fixtures/vercel-ai).
CACHED_USAGE = {
    "input_tokens": 1000,
    "output_tokens": 100,
    "total_tokens": 1100,
    "input_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 300},
    "output_tokens_details": {"reasoning_tokens": 0},
}

# The UI run's model with a fast tier (FAKE_GATEWAY_TIERED, step 'speed-menu'): Fake Speedy, priced so
# that neither tier trips that run's spend limit nor undercuts Fake Tools as the small-task model.
SPEED_UI_MODELS = [
    {**SPEED_MODELS[0], "pricing": {"input": "0.0000015", "output": "0.000003"}},
    {**SPEED_MODELS[1], "pricing": {"input": "0.000003", "output": "0.000006"}},
]

# What a careless or hostile gateway lists: numbers JSON cannot carry (Python's parser reads them as
# inf/nan), negative and absurd values, wrong types, and entries that are not objects at all.
HOSTILE_MODELS = b"""{"object": "list", "data": [
  {"id": "hostile/nan-price", "type": "language", "context_window": 128000, "max_tokens": 4096,
   "tags": ["tool-use"], "pricing": {"input": "NaN", "output": "1e400", "input_cache_read": "-1",
   "input_cache_write": true}},
  {"id": "hostile/inf-window", "type": "language", "context_window": 1e400, "max_tokens": 1e400,
   "tags": 5, "pricing": [1]},
  {"id": "hostile/nan-window", "type": "language", "context_window": NaN, "max_tokens": -Infinity,
   "tags": ["tool-use", 7], "name": {"x": 1}, "pricing": {"input": [{"price": "Infinity"}], "output": [null]}},
  {"id": "hostile/absurd", "type": "language", "context_window": 1e300, "max_tokens": 0.5,
   "pricing": {"input": "1e-400", "output": "5000"}},
  {"id": 5}, "not an object", null, [],
  {"id": "fake/text", "name": "Fake Text", "type": "language", "owned_by": "fake", "context_window": 200000,
   "max_tokens": 32000, "tags": ["tool-use"], "pricing": {"input": "0.000003", "output": "0.000015"}}
]}"""


# What a gateway's text may hold that its reader must not obey: a command link (VS Code's
# notifications make `[label](command:…)` clickable), an icon (`$(name)`), an OSC 52 clipboard write,
# a screen clear, a carriage return and a forged line. In model names under a base URL with `/hostile-text/` in its path
# (`fake/tools` keeps its place as the small-task pick), in the `hostile-text` scenario's error and
# answer, and in the credits error of the key `credits-hostile-text` (fake_spend.py).
HOSTILE_TEXT = fake_spend.HOSTILE_TEXT
# And, listed there too, an id no request may name and no usage record may hold (longer than
# protocol.MAX_MODEL_ID), priced, without tools (so it is no small-task pick).
LONG_ID_MODEL = {**MODELS[0], "id": "fake/" + "long" * 60, "name": "Fake Long Id", "tags": []}
# And markup in every form VS Code's hover reads as a link (it renders a model's name, `id@version` and
# tooltip as trusted markdown): an autolink and a reference link in the name, a link in `released`
# (the version), a reference definition in `owned_by` (a line of the tooltip); and an id with a link.
COMMAND = "command:workbench.action.terminal.new"
MARKUP_MODEL = {
    **MODELS[0],
    "id": "fake/markup",
    "name": f"Fake Markup <{COMMAND}> <https://example.com> [Get free credits][free] {COMMAND}",
    "released": f"[1.0]({COMMAND})\n[free]: {COMMAND}",
    "owned_by": f"fake\n[free]: {COMMAND}",
    "tags": [],
}
MARKUP_ID_MODEL = {**MODELS[0], "id": f"fake/[x]({COMMAND})", "name": "Fake Markup Id", "tags": []}


# `GET …/models/metrics` (offer/metrics.py; the gateway SDK's `getModelMetrics`): rows of model ×
# provider, as its answer has them. By first token, quickest first: Fake Tools, Fake Pricey, Fake Text
# (its busier provider's; the other is quicker on fewer samples), Fake Reasoning; Fake Plain is a
# catalogue-only row (nothing measured). FAKE_GATEWAY_METRICS=404 answers as a gateway
# without the endpoint, `garbage` with no list, `bad-rows` with two unreadable rows among the good.
def metrics_row(
    model: str, provider: str | None, ttft: tuple[float, float] | None, tps: float | None, up: float | None, n: int
) -> dict[str, Any]:
    meta = {"source": "observed", "window": "1h", "measured_at": "2026-07-05T00:00:00.000Z", "sample_size": n}
    return {
        "id": model,
        "name": model,
        "provider": provider,
        "type": "language",
        "tags": [],
        "pricing": {"meta": {"source": "declared"}},
        "latency_last_1h": {"p50": ttft[0], "p95": ttft[1], "meta": meta} if ttft else None,
        "throughput_last_1h": {"p50": tps, "p95": tps * 1.5, "meta": meta} if tps else None,
        "uptime": {"last_15m": up, "last_1h": up, "last_1d": up, "meta": meta} if up is not None else None,
    }


METRICS_ROWS = [
    metrics_row("fake/text", "fake-a", (800, 2100), 60, 99.5, 500),
    metrics_row("fake/text", "fake-b", (300, 650), 120, 100, 20),
    metrics_row("fake/tools", "fake-a", (250, 700), 140, 99.9, 900),
    metrics_row("fake/reasoning", "fake-b", (1500, 4200), 45, 98.7, 300),
    metrics_row("fake/pricey", "fake-a", (600, 1500), 90, 100, 100),
    metrics_row("fake/plain", None, None, None, None, 0),
]
METRICS_META = {
    "generated_at": "2026-07-05T00:00:00.000Z",
    "source_windows": {"latency": "1h", "throughput": "1h", "uptime": ["15m", "1h", "1d"]},
    "provenance_note": "Latency and throughput are observed from live gateway traffic.",
}


def serve_metrics(h: Handler) -> None:
    mode = os.environ.get("FAKE_GATEWAY_METRICS", "")
    status = 404 if mode == "404" else 200
    h.server.gateway.record_lookup({"path": "metrics", "status": status, "query": h.path.partition("?")[2]})
    if mode == "404":
        h._json(404, {"error": {"message": "no such route", "type": "not_found"}})
    elif mode == "garbage":
        h._json(200, {"object": "list", "data": "metrics are elsewhere now"})
    elif mode == "bad-rows":  # a NaN (Python's parser reads it) and an id with a space
        bad = [
            {**METRICS_ROWS[2], "latency_last_1h": {"p50": float("nan"), "p95": 1}},
            {**METRICS_ROWS[4], "id": "x y"},
        ]
        h._json(200, {"object": "list", "data": [*METRICS_ROWS, *bad], "meta": METRICS_META})
    else:
        h._json(200, {"object": "list", "data": METRICS_ROWS, "meta": METRICS_META})


HOSTILE_TEXT_MODELS = [
    *({**m, "name": f"{m['name']} {HOSTILE_TEXT}"} if m["id"] == "fake/tools" else m for m in MODELS),
    LONG_ID_MODEL,
    MARKUP_MODEL,
    MARKUP_ID_MODEL,
]


def echo_key_error(authorization: str | None) -> dict[str, Any]:
    return {"error": {"message": f"Invalid API key in '{authorization}'", "type": "authentication_error"}}


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def response_obj(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_fake_1", "object": "response", "status": status, "model": "fake", **extra}


def text_events(chunks: list[str], index: int = 0) -> list[dict[str, Any]]:
    item_id = f"msg_fake_{index}"
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": index, "item": {"id": item_id, "type": "message"}},
    ]
    events += [
        {
            "type": "response.output_text.delta",
            "output_index": index,
            "content_index": 0,
            "item_id": item_id,
            "delta": c,
        }
        for c in chunks
    ]
    full = "".join(chunks)
    events.append({"type": "response.output_text.done", "output_index": index, "content_index": 0, "text": full})
    events.append(
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": {"id": item_id, "type": "message", "content": [{"type": "output_text", "text": full}]},
        }
    )
    return events


def call_events(call_id: str, name: str, arguments: str, index: int = 0) -> list[dict[str, Any]]:
    item = {"id": f"fc_{call_id}", "type": "function_call", "call_id": call_id, "name": name, "arguments": ""}
    half = len(arguments) // 2
    return [
        {"type": "response.output_item.added", "output_index": index, "item": item},
        {"type": "response.function_call_arguments.delta", "output_index": index, "delta": arguments[:half]},
        {"type": "response.function_call_arguments.delta", "output_index": index, "delta": arguments[half:]},
        {"type": "response.function_call_arguments.done", "output_index": index, "arguments": arguments},
        {"type": "response.output_item.done", "output_index": index, "item": {**item, "arguments": arguments}},
    ]


def completed(**extra: Any) -> dict[str, Any]:
    return {"type": "response.completed", "response": response_obj("completed", usage=USAGE, **extra)}


class Gateway:
    """Shared state of one fake gateway: the request log and per-scenario counters."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.counters: dict[str, int] = {}
        self.lock = threading.Lock()
        self.generations = fake_spend.Generations()
        self.lookups: list[dict[str, Any]] = []  # GETs of credits, generations (fake_spend.py) and the model list
        # The default list with the markup models too, from `POST /_catalogue {"markup": true}` on: a
        # UI test's way to change what a running host lists (tests/e2e/ui.mjs, 'hover-markup').
        self.markup = False
        self.cache = fake_cache.PromptCache()  # the providers' prompt caches, under `/cache/`

    def record_lookup(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.lookups.append(entry)

    def generation(self, generation_id: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            return self.generations.look_up(generation_id)

    def record(self, entry: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests.append(entry)
        return entry

    def bump(self, key: str, by: int = 1) -> int:
        with self.lock:
            self.counters[key] = self.counters.get(key, 0) + by
            return self.counters[key]


class ChunkedWriter:
    """A response body in HTTP/1.1 chunks: each write is one chunk; `finish()` writes the last."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, data: bytes) -> int:
        if data:
            self.raw.write(b"%x\r\n%s\r\n" % (len(data), data))
        return len(data)

    def flush(self) -> None:
        self.raw.flush()

    def finish(self) -> None:
        try:
            self.raw.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away, or the scenario reset the connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)  # closed, close: what socketserver asks of its writer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CLIENT_TIMEOUT  # on the connection's socket: every read and write of this handler
    server: FakeServer
    usage: dict[str, Any] | None = None  # replaces the usage of the terminal event (the tokenizer scenario)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # ---- plumbing ----

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self._raw(status, body, "application/json", headers)

    def _raw(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _start_stream(self) -> None:
        """As a real gateway streams: chunked, each write one HTTP chunk; a reset before the last
        chunk is then a broken answer, not the end of one."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each event leaves when written
        self.wfile = ChunkedWriter(self.wfile)  # type: ignore[assignment]

    def _send(self, entry: dict[str, Any], events: list[dict[str, Any]], gap: float = 0.0) -> bool:
        """Write events; False (and the time noted) when the client has gone away."""
        try:
            for event in events:
                if self.usage is not None and event["type"] in ("response.completed", "response.incomplete"):
                    event = {**event, "response": {**event["response"], "usage": self.usage}}
                self.wfile.write(sse(event))
                self.wfile.flush()
                if "first_write" not in entry:
                    entry["first_write"] = time.time()
                if gap:
                    time.sleep(gap)
        except (BrokenPipeError, ConnectionResetError):
            entry["client_closed_at"] = time.time()
            return False
        return True

    def _reset(self) -> None:
        if isinstance(self.wfile, ChunkedWriter):
            self.wfile = self.wfile.raw  # no last chunk: the answer is broken off
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    # ---- routes ----

    def do_GET(self) -> None:
        if fake_spend.serve_get(self, self.server.gateway):
            return
        virtual = re.search(r"/models/(vmc/[^/?]+)$", self.path.rstrip("/"))
        if self.path.partition("?")[0].endswith("/models/metrics"):
            serve_metrics(self)
        elif virtual and os.environ.get("FAKE_GATEWAY_VIRTUAL"):
            known = virtual.group(1) == VIRTUAL_MODEL["id"]
            self.server.gateway.record_lookup({"path": virtual.group(0), "status": 200 if known else 404})
            if known:
                self._json(200, VIRTUAL_MODEL)
            elif virtual.group(1) == "vmc/slow":
                time.sleep(30)  # past the sidecar's bound on one read (offer/virtual.py)
                self._json(404, {"error": {"message": "too late", "type": "not_found"}})
            else:
                self._json(404, {"error": {"message": f"model {virtual.group(1)} not found", "type": "not_found"}})
        elif self.path.rstrip("/").endswith("/models"):
            self.server.gateway.record_lookup({"path": "models", "status": 200})
            if self.headers.get("authorization") == "Bearer models-500":  # a list that cannot be read
                self._json(500, {"error": {"message": "catalogue unavailable", "type": "internal_server_error"}})
            elif "/echo-key/" in self.path:  # a gateway that quotes the key it was sent
                self._json(401, echo_key_error(self.headers.get("authorization")))
            elif "/hostile/" in self.path:
                self._raw(200, HOSTILE_MODELS, "application/json")
            elif "/hostile-text/" in self.path:
                self._json(200, {"object": "list", "data": HOSTILE_TEXT_MODELS})
            elif "/tokenizer/" in self.path:
                self._json(200, {"object": "list", "data": [*MODELS, TOKENIZER_MODEL]})
            elif "/surrogate/" in self.path:  # a name with a lone surrogate, as JSON's \ud800 can carry
                lone = {**MODELS[0], "id": "fake/lone", "name": "Lone \ud800 Name"}
                self._json(200, {"object": "list", "data": [*MODELS, lone]})
            elif "/rules/" in self.path:
                self._json(200, {"object": "list", "data": [*MODELS, *RULE_MODELS]})
            elif "/virtual-listed/" in self.path:
                self._json(200, {"object": "list", "data": [*MODELS, VIRTUAL_MODEL]})
            elif "/tiers/" in self.path:
                self._json(200, {"object": "list", "data": [*MODELS, TIERED_MODEL]})
            elif "/efforts/" in self.path:
                self._json(200, {"object": "list", "data": [*MODELS, *EFFORT_MODELS, *SPEED_MODELS, *TIER_MODELS]})
            elif "/cache/" in self.path:
                self._json(200, {"object": "list", "data": [*MODELS, *fake_cache.CACHE_MODELS]})
            elif "/agents/" in self.path:  # and the multi-turn reasoning agent (fake_reasoning.py)
                agents = [*MODELS, *EFFORT_MODELS, *SPEED_MODELS, REASONING_AGENT_MODEL]
                self._json(200, {"object": "list", "data": agents})
            elif os.environ.get("FAKE_GATEWAY_OVERFLOW_AGENT"):  # issue 36 §1's model (fake_agent.py)
                markup = [MARKUP_MODEL, MARKUP_ID_MODEL] if self.server.gateway.markup else []
                tiered = (
                    [TIERED_MODEL, *SPEED_UI_MODELS, *RULE_MODELS, *TIER_MODELS]
                    if os.environ.get("FAKE_GATEWAY_TIERED")
                    else []
                )  # the UI run's
                self._json(200, {"object": "list", "data": [*MODELS, OVERFLOW_MODEL, *tiered, *markup]})
            else:
                self._json(200, {"object": "list", "data": MODELS})
        elif self.path == "/_requests":
            with self.server.gateway.lock:
                # each entry but its `raw` bytes, which only an in-process test reads
                self._json(200, [{k: v for k, v in e.items() if k != "raw"} for e in self.server.gateway.requests])
        else:
            self._json(404, {"error": {"message": "no such route", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if not 0 <= length <= MAX_REQUEST_BODY:
            self.close_connection = True
            self._json(413, {"error": {"message": "request body too large", "type": "invalid_request_error"}})
            return
        raw = self.rfile.read(length)
        received_at = time.time()  # the whole body is here: before parsing it, which takes ms for a long history
        if self.path == "/_reset":
            with self.server.gateway.lock:
                self.server.gateway.requests.clear()
                self.server.gateway.counters.clear()
                self.server.gateway.lookups.clear()
            self.server.gateway.cache.reset()
            self._json(200, {"ok": True})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        if self.path == "/_catalogue":
            with self.server.gateway.lock:
                self.server.gateway.markup = body.get("markup") is True
            self._json(200, {"ok": True})
            return
        scenario = (
            self.headers.get("x-fake-scenario")
            or scenario_marker(body)
            or str(body.get("model", "")).removeprefix("fake/")
        )
        entry = self.server.gateway.record(
            {
                "path": self.path,
                "scenario": scenario,
                "body": body,
                "raw": raw,  # the body's bytes as sent: a conversation's requests share their prefix (rfcs/0011)
                "authorization": self.headers.get("authorization"),
                "headers": {
                    key.lower(): value for key, value in self.headers.items() if key.lower() != "authorization"
                },
                # as they arrived, a name sent twice twice (`headers` keeps the last)
                "raw_headers": [[key, value] for key, value in self.headers.items() if key.lower() != "authorization"],
                "providerOptions": body.get("providerOptions") if isinstance(body, dict) else None,
                "received_at": received_at,
            }
        )
        if not self.path.rstrip("/").endswith("/responses"):
            self._json(404, {"error": {"message": "no such route", "type": "not_found"}})
            return
        if "/cache/" in self.path and isinstance(body, dict):
            entry["cache"] = self.server.gateway.cache.serve(body, raw, self.headers.get("x-session-affinity"))
            self.usage = fake_cache.usage(entry["cache"])
        serve_scenario(self, scenario, body, entry)
        if isinstance(self.wfile, ChunkedWriter):
            self.wfile.finish()


def scenario_marker(body: dict[str, Any]) -> str | None:
    """`[scenario:NAME]` in the last user text picks the scenario (for clients that cannot set
    headers or model ids, such as a real VS Code)."""
    for item in reversed(body.get("input") or []):
        if isinstance(item, dict) and item.get("role") == "user":
            for part in item.get("content") or []:
                match = re.search(
                    r"\[scenario:([\w:./-]+)\]", str(part.get("text", "")) if isinstance(part, dict) else ""
                )
                if match:
                    return match.group(1)
            return None
    return None


def tool_outputs(body: dict[str, Any]) -> list[str]:
    outputs = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            outputs.append(output if isinstance(output, str) else json.dumps(output))
    return outputs


def serve_scenario(h: Handler, scenario: str, body: dict[str, Any], entry: dict[str, Any]) -> None:
    created = {"type": "response.created", "response": response_obj("in_progress")}
    if serve_hostile(h, scenario, entry):
        return
    if scenario == "tokenizer" or scenario.startswith("tokenizer:"):
        serve_tokenizer(h, scenario, body, entry)
        return
    if scenario == "overflow" or scenario.startswith("overflow:"):  # overflow:N names a limit of N tokens
        limit = int(scenario.partition(":")[2] or 200000)
        refuse_overflow(h, limit + 10000, limit)
        return
    if scenario.startswith("ratelimit-after:"):
        h._raw(429, ERRORS[429][0].encode(), "application/json", {"retry-after": scenario.partition(":")[2]})
        return
    if scenario == "hostile-text":
        h._json(400, {"error": {"message": f"Bad request {HOSTILE_TEXT}", "type": "invalid_request_error"}})
        return
    if scenario == "echo-key-401":
        h._json(401, echo_key_error(h.headers.get("authorization")))
        return
    if scenario == "echo-request-400":  # quotes the fields at stake, then the body and headers, as JSON
        options, team = json.dumps(body.get("providerOptions")), json.dumps(entry["headers"].get("x-team"))
        quoted = f"Invalid request for providerOptions {options} and x-team {team}: body {json.dumps(body)}"
        quoted += f" with headers {json.dumps(entry['headers'])}"
        h._json(400, {"error": {"message": quoted, "type": "invalid_request_error"}})
        return
    if scenario == "ratelimit-noheader":
        h._raw(429, ERRORS[429][0].encode(), "application/json")
        return
    if scenario.startswith("error-"):
        serve_error(h, int(scenario.split("-")[1]))
        return
    if scenario in BUDGET_REFUSALS or scenario in ACCOUNT_REFUSALS or scenario in RULE_REFUSALS:
        status, body, headers = {**BUDGET_REFUSALS, **ACCOUNT_REFUSALS, **RULE_REFUSALS}[scenario]
        h._raw(status, body.encode(), "application/json", headers)
        return
    if scenario.startswith("flaky-"):
        _, status, times = scenario.split("-")
        if h.server.gateway.bump(scenario) <= int(times):
            serve_error(h, int(status))
            return
        scenario = "text"
    if scenario.startswith(("chunked-", "chunked64k-", "paced-")):
        serve_chunked(h, scenario, entry)
        return
    if scenario == "agent-loop":
        serve_agent_loop(h, body, entry, created)  # may refuse before any stream starts
        return
    if scenario == "overflow-agent":
        serve_overflow_agent(h, body, entry, created)  # may refuse before any stream starts
        return
    if scenario == "soak":
        serve_soak(h, body, entry)  # bench/soak.mjs: agent turns with faults
        return
    if scenario.startswith("billed"):
        serve_billed(h, scenario, body, entry)
        return
    if scenario in (model["id"] for model in TIER_MODELS):
        serve_tiers(h, body, entry, created)
        return
    if scenario.startswith("replay:"):
        h._start_stream()
        data = (FIXTURES / scenario.removeprefix("replay:")).read_bytes()
        try:
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return
    if scenario == "reasoning-agent" or scenario.startswith("reasoning-agent:"):
        serve_reasoning_agent(h, scenario, body, entry, created)
        return
    if scenario.startswith("strict-reasoning"):
        serve_strict_reasoning(h, scenario, body, entry, created)
        return
    h._start_stream()
    if scenario == "echo-key-stream":
        error = {"type": "error", "error": echo_key_error(h.headers.get("authorization"))["error"]}
        h._send(entry, [created, *text_events(["Partial"]), error])
        return
    if scenario == "tools":
        outputs = tool_outputs(body)
        if outputs:
            h._send(entry, [created, *text_events(["The tool said: ", outputs[-1]]), completed()])
            return
        tools = body.get("tools") or [{"name": "get_weather"}]
        name = str(tools[0].get("name"))
        h._send(entry, [created, *call_events("call_fake_1", name, '{"city": "Paris", "days": 2}'), completed()])
        return
    if scenario.startswith("agent-read"):
        serve_agent_read(h, scenario, body, entry, created)
        return
    if scenario.startswith("bench-"):
        h.wfile.write(bench_body(int(scenario.partition("-")[2])))  # as fast as the socket takes it
        return
    if scenario == "ttfp":
        h._send(entry, [created])
        time.sleep(0.005)
        events = text_events(ANSWER)
        entry["first_delta_at"] = time.time()
        h._send(entry, events[:2])  # the item, then the first delta
        time.sleep(0.02)
        h._send(entry, [*events[2:], completed()])
        return
    if scenario.startswith("calibrate:"):
        # A provider whose tokenizer counts `ratio` times what ours does.
        from gateway_lm.tokens.tokenizer import count_request

        # `calibrate:RATIO:written`: the whole input written to the prompt cache too, as a
        # conversation's first request with caching asked (tests/test_cache_savings.py).
        ratio, _, cache = scenario.partition(":")[2].partition(":")
        reported = round(float(ratio) * count_request(body, str(body.get("model"))))
        usage = {**USAGE, "input_tokens": reported, "total_tokens": reported + 7}
        if cache == "written":
            usage["input_tokens_details"] = {"cached_tokens": 0, "cache_write_tokens": reported}
        done = {"type": "response.completed", "response": response_obj("completed", usage=usage)}
        h._send(entry, [created, *text_events(ANSWER), done])
        return
    if scenario == "cached":
        done = {"type": "response.completed", "response": response_obj("completed", usage=CACHED_USAGE)}
        h._send(entry, [created, *text_events(ANSWER), done])
        return
    if scenario == "huge-event":
        h._send(entry, [created, *text_events(["x" * 5_000_000]), completed()])
        return
    if scenario == "utf8-split":
        serve_split_utf8(h, entry, [created, *text_events(["héllo ", "wörld ", "日本語 ", "🙂👍"]), completed()])
        return
    if scenario.startswith("tag:"):
        tag = scenario.partition(":")[2]
        h._send(entry, [created, *text_events([f"<{tag}>"] * 30), completed()], gap=0.002)
        return
    if scenario == "words":
        words = [w + " " for w in "Hello from the fake gateway, streamed word by word to Copilot Chat.".split()]
        h._send(entry, [created, *text_events(words), completed()], gap=0.05)
        return
    if scenario == "reasoning":
        rid = "rs_fake_0"
        thinking = [
            {"type": "response.output_item.added", "output_index": 0, "item": {"id": rid, "type": "reasoning"}},
            *[
                {
                    "type": "response.reasoning_summary_text.delta",
                    "output_index": 0,
                    "summary_index": 0,
                    "item_id": rid,
                    "delta": d,
                }
                for d in ["Thinking", " about", " it."]
            ],
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {
                    "id": rid,
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "Thinking about it."}],
                },
            },
        ]
        h._send(entry, [created, *thinking, *text_events(ANSWER, 1), completed()])
        return
    if scenario == "failed":
        error = {
            "type": "error",
            "error": {"type": "server_error", "code": "server_error", "message": "overloaded"},
            "generationId": "gen_fake_stream",
        }
        failed = {"type": "response.failed", "response": response_obj("failed", error={"message": "overloaded"})}
        # One write: text and failure arrive in the same read, and the text must still be shown.
        h.wfile.write(b"".join(sse(e) for e in [created, *text_events(["Partial"]), error, failed]))
        return
    if scenario == "incomplete":
        incomplete = {
            "type": "response.incomplete",
            "response": response_obj("incomplete", usage=USAGE, incomplete_details={"reason": "max_output_tokens"}),
        }
        h._send(entry, [created, *text_events(["Cut", " short"]), incomplete])
        return
    if scenario == "reset":
        h._send(entry, [created, *text_events(["Partial", " answer"])[:3]])
        h._reset()
        return
    if scenario == "noterminal":
        h._send(entry, [created, *text_events(["Partial", " answer"])])
        return
    if scenario == "stall":
        h._send(entry, [created, *text_events(["Partial"])[:2]])
        deadline = time.time() + 30
        while time.time() < deadline:  # until the client gives up
            time.sleep(0.05)
            if not h._send(entry, []) or _peer_closed(h):
                entry["client_closed_at"] = time.time()
                return
        return
    if scenario == "slow":
        chunks = [f"chunk{i} " for i in range(400)]
        h._send(entry, [created, *text_events(chunks)[:-2], completed()], gap=0.02)
        return
    if scenario == "echo":
        h._send(entry, [created, *text_events([json.dumps(body)]), completed()])
        return
    if scenario == "rule-rewrite":  # a team routing rule served RULE_DESTINATION in the model's place
        served = {"model": RULE_DESTINATION}
        started = {"type": "response.created", "response": response_obj("in_progress", **served)}
        done = {"type": "response.completed", "response": response_obj("completed", usage=USAGE, **served)}
        h._send(entry, [started, *text_events(ANSWER), done])
        return
    if scenario == "hostile-answer":
        h._send(entry, [created, *text_events(["Hi ", HOSTILE_TEXT]), completed()])
        return
    if scenario == "titled":  # Copilot's chat request offers tools; its title request (a small task) does not
        h._send(entry, [created, *text_events(ANSWER if body.get("tools") else [TITLE]), completed()])
        return
    h._send(entry, [created, *text_events(ANSWER), completed()])


def refuse_overflow(h: Handler, tokens: int, limit: int) -> None:
    """A provider's context-overflow error, worded as Anthropic words it (the limit is in the text)."""
    message = f"prompt is too long: {tokens} tokens > {limit} maximum"
    h._json(400, {"error": {"message": message, "type": "invalid_request_error"}})


def serve_tokenizer(h: Handler, scenario: str, body: dict[str, Any], entry: dict[str, Any]) -> None:
    """`tokenizer[:FACTOR[:LIMIT[:SCENARIO]]]`: a provider whose tokenizer counts FACTOR (1.35) times
    o200k and which enforces a LIMIT on the input as it counts it (fake/tokenizer's window minus its
    max output, 51,808, as a provider that keeps room for the answer): over it, an overflow error as
    Anthropic words it; within it, SCENARIO (text) with the input tokens it counted."""
    from gateway_lm.tokens.tokenizer import count_request

    _, _, rest = scenario.partition(":")
    factor_text, _, rest = rest.partition(":")
    limit_text, _, inner = rest.partition(":")
    factor = float(factor_text or 1.35)
    limit = int(limit_text or TOKENIZER_WINDOW - TOKENIZER_MAX_OUTPUT)
    reported = round(factor * count_request(body, str(body.get("model"))))
    entry["input_tokens"] = reported
    if reported > limit:
        refuse_overflow(h, reported, limit)
        return
    h.usage = {**USAGE, "input_tokens": reported, "total_tokens": reported + USAGE["output_tokens"]}
    h.usage["input_tokens_details"] = {"cached_tokens": 0}
    serve_scenario(h, inner or "text", body, entry)


def serve_billed(h: Handler, scenario: str, body: dict[str, Any], entry: dict[str, Any]) -> None:
    """A plain answer whose generation the fake records once it has been sent (fake_spend.py)."""
    gateway = h.server.gateway
    with gateway.lock:
        generation_id = gateway.generations.new_id()
    response_id, extra = generation_id, {}
    if scenario == "billed-meta":  # the id only in provider metadata, as the AI SDK reports it
        response_id, extra = "resp_meta_1", {"providerMetadata": {"gateway": {"generationId": generation_id}}}
    created = {"type": "response.created", "response": {**response_obj("in_progress"), "id": response_id}}
    done = {"type": "response.completed", "response": {**response_obj("completed", usage=USAGE, **extra)}}
    done["response"]["id"] = response_id
    h._start_stream()
    h._send(entry, [created, *text_events(ANSWER), done])
    with gateway.lock:
        gateway.generations.add(generation_id, str(body.get("model", "")), scenario)


def serve_tiers(h: Handler, body: dict[str, Any], entry: dict[str, Any], created: dict[str, Any]) -> None:
    """A plain answer that says the service tier that served it, as the gateway does: in
    `provider_metadata.gateway.serviceTier` only for flex, priority and ultrafast, and OpenAI's
    `service_tier` always (the service-tiers page; the tier asked, or standard for TIER_SERVED_DEFAULT)."""
    options = body.get("providerOptions") or {}
    asked = (options.get("gateway") or {}).get("serviceTier") if isinstance(options, dict) else None
    if body.get("service_tier") == "ultrafast":
        asked = "ultrafast"
    served = asked if asked in ("flex", "priority", "ultrafast") and body.get("model") != TIER_SERVED_DEFAULT else None
    extra: dict[str, Any] = {"service_tier": served or "default"}
    if served:
        extra["provider_metadata"] = {"gateway": {"serviceTier": served}}
    h._start_stream()
    h._send(entry, [created, *text_events(ANSWER), completed(**extra)])


def serve_agent_read(
    h: Handler, scenario: str, body: dict[str, Any], entry: dict[str, Any], created: dict[str, Any]
) -> None:
    """An agent round trip: ask for the editor's read-file tool on a path, then quote what it returned."""
    outputs = tool_outputs(body)
    if outputs:
        h._send(entry, [created, *text_events(["The tool said: ", outputs[-1][:400]]), completed()])
        return
    path = scenario.partition(":")[2]
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    tool = next((t for t in tools if "read" in str(t.get("name")) and "file" in str(t.get("name"))), None)
    if tool is None:
        h._send(entry, [created, *text_events(["No read-file tool was offered."]), completed()])
        return
    arguments = json.dumps(fill_arguments(tool.get("parameters") or {}, path))
    h._send(entry, [created, *call_events("call_read_1", str(tool["name"]), arguments), completed()])


def fill_arguments(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """Plausible arguments for a read-file tool, whatever its parameter names."""
    args: dict[str, Any] = {}
    properties = schema.get("properties") or {}
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        lowered = name.lower()
        if "path" in lowered or "file" in lowered or "uri" in lowered:
            args[name] = path
        elif kind in ("integer", "number") and name in (schema.get("required") or []):
            args[name] = 1 if ("start" in lowered or "offset" in lowered) else 200
    return args


@functools.cache
def bench_body(count: int) -> bytes:
    return b"".join(sse(e) for e in bench_events(count))


@functools.cache
def bench_events(count: int) -> list[dict[str, Any]]:
    """A recorded-shape stream of `count` events (text deltas with the fields OpenAI sends)."""
    created = {"type": "response.created", "sequence_number": 0, "response": response_obj("in_progress")}
    events = [
        created,
        {
            "type": "response.output_item.added",
            "sequence_number": 1,
            "output_index": 0,
            "item": {"id": "msg_bench", "type": "message", "status": "in_progress", "content": [], "role": "assistant"},
        },
    ]
    for n in range(count - 3):
        events.append(
            {
                "type": "response.output_text.delta",
                "sequence_number": n + 2,
                "item_id": "msg_bench",
                "output_index": 0,
                "content_index": 0,
                "delta": f" word{n % 97}",
                "logprobs": [],
                "obfuscation": "aZ3kQ9",
            }
        )
    events.append(completed())
    return events


def serve_chunked(h: Handler, scenario: str, entry: dict[str, Any]) -> None:
    """As a real gateway sends a stream: `Transfer-Encoding: chunked`, flushed as the model produces it.
    `chunked-N`: N events, one HTTP chunk each; `chunked64k-N`: the same bytes in 64 KiB chunks;
    `paced-N-MS`: one chunk per event, MS milliseconds apart (a model producing tokens)."""
    kind, _, rest = scenario.partition("-")
    count, _, gap_ms = rest.partition("-")
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.send_header("transfer-encoding", "chunked")
    h.end_headers()
    h.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each chunk leaves when written
    gap = float(gap_ms or 0) / 1000
    try:
        for n, chunk in enumerate(http_chunks(int(count), kind == "chunked64k")):
            if n == 2 and "first_delta_at" not in entry:
                entry["first_delta_at"] = time.time()
            h.wfile.write(chunk)
            if gap:
                time.sleep(gap)
        h.wfile.write(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        entry["client_closed_at"] = time.time()
    h.close_connection = True


@functools.cache
def http_chunks(count: int, large: bool) -> list[bytes]:
    frames = [sse(e) for e in bench_events(count)]
    if large:
        data = b"".join(frames)
        frames = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    return [b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames]


def serve_split_utf8(h: Handler, entry: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """Writes the stream 3 bytes at a time, so multi-byte characters straddle reads."""
    data = b"".join(f"data: {json.dumps(e, ensure_ascii=False)}\r\n\r\n".encode() for e in events)
    for start in range(0, len(data), 3):
        h.wfile.write(data[start : start + 3])
        h.wfile.flush()
        time.sleep(0.0005)


def _peer_closed(h: Handler) -> bool:
    try:
        h.connection.setblocking(False)
        try:
            data = h.connection.recv(1, socket.MSG_PEEK)
        finally:
            h.connection.settimeout(CLIENT_TIMEOUT)  # back to bounded, not to blocking for good
    except BlockingIOError:
        return False
    except OSError:
        return True
    return data == b""


ERRORS: dict[int, tuple[str, dict[str, str]]] = {
    400: (
        '{"error":{"message":"Invalid input: tools.0.name is required","type":"invalid_request_error"},'
        '"generationId":"gen_fake_400"}',
        {},
    ),
    401: ('{"error":{"message":"Invalid API key","type":"authentication_error"}}', {}),
    403: ('{"error":{"message":"Free tier users do not have access to this model","type":"forbidden"}}', {}),
    404: ('{"error":{"message":"Model fake/missing not found","type":"model_not_found"}}', {}),
    413: ('{"error":{"message":"Input is too long for requested model.","type":"invalid_request_error"}}', {}),
    424: ('{"error":{"message":"Provider failed","type":"failed_dependency"}}', {}),
    429: ('{"error":{"message":"Rate limit exceeded","type":"rate_limit_exceeded"}}', {"retry-after": "0"}),
    500: ('{"error":{"message":"Internal error","type":"internal_server_error"},"generationId":"gen_fake_500"}', {}),
    502: ("<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>", {}),
    503: ('{"error":{"message":"Service unavailable","type":"internal_server_error"}}', {}),
    504: ("<html><head><title>504 Gateway Time-out</title></head><body>timeout</body></html>", {}),
}


# Refusals for one of the gateway's spend budgets (rfcs/0006-spend.md, "The gateway's budgets"). No
# public recording of the gateway's own answer was found: these are its documented error envelope
# (`{error: {message, type, param, code}, generationId}`, as @ai-sdk/gateway parses it) with the
# statuses other gateways refuse a budget with (402, 403, 429), the scope told three ways (a type, a
# `param.scopeType` of the budgets API, the message alone), and a link in the text that must not
# reach the user.
BUDGET_REFUSALS: dict[str, tuple[int, str, dict[str, str]]] = {
    "budget-key": (
        402,
        '{"error":{"message":"API key budget exceeded: $5.00 of $5.00 used this month.",'
        '"type":"budget_exceeded","code":"api_key_budget_exceeded"},"generationId":"gen_fake_budget"}',
        {},
    ),
    "budget-team": (
        403,
        '{"error":{"message":"Spend budget reached. Raise it at https://vercel.com/d?to=/ai-gateway/budgets",'
        '"type":"forbidden","param":{"scopeType":"team"}}}',
        {},
    ),
    "budget-429": (
        429,
        '{"error":{"message":"Project budget exceeded; requests resume when the budget resets.",'
        '"type":"rate_limit_exceeded"}}',
        {"retry-after": "0"},
    ),
}


# Refusals about the account, as the real gateway words them (public reports, 2026): a team with no
# card on file, and a model free credits do not cover. Their advice is their own (errors.py).
ACCOUNT_REFUSALS: dict[str, tuple[int, str, dict[str, str]]] = {
    "unverified": (
        403,
        '{"error":{"message":"AI Gateway requires a valid credit card on file to service requests.'
        ' Please visit https://vercel.com/d?to=/[team]/~/ai to add a card and unlock your free credits.",'
        '"type":"customer_verification_required"}}',
        {},
    ),
    "free-tier-model": (
        403,
        '{"error":{"message":"This model is not available on the free tier.","type":"free_tier_model_not_available"}}',
        {},
    ),
}


# A team routing rule's deny (rfcs/0003-rpc-contract.md, "A team's routing rules"): the body the
# gateway's routing-rules page documents (a flat `error` string), and the envelope @ai-sdk/gateway
# reads (vercel/ai #16105, #16242), where the rule names itself in `param` and its reason, its
# author's text, may hold a link.
RULE_REFUSALS: dict[str, tuple[int, str, dict[str, str]]] = {
    "rule-denied": (
        403,
        '{"error":"Request denied by a routing rule.","type":"forbidden","statusCode":403}',
        {},
    ),
    "rule-denied-reason": (
        403,
        '{"error":{"message":"Opus is off limits for this team, see https://example.com/policy",'
        '"type":"forbidden","param":{"ruleId":"rule_abc123"}},"generationId":"gen_fake_rule"}',
        {},
    ),
}


def serve_error(h: Handler, status: int) -> None:
    body, headers = ERRORS.get(status, ('{"error":{"message":"error"}}', {}))
    if status == 400 and h.headers.get("x-fake-overflow"):
        body = ERRORS[413][0]
    ctype = "text/html" if body.startswith("<") else "application/json"
    h._raw(status, body.encode(), ctype, headers)


# ---- a gateway that misbehaves on purpose: time and memory bounds (issue 11) ----

CREATED = {"type": "response.created", "response": response_obj("in_progress")}
HOLD_FOR = 20.0  # how long a never-ending scenario goes on if the client does not give up


def serve_hostile(h: Handler, scenario: str, entry: dict[str, Any]) -> bool:
    """Serves `scenario` if it is one of these; False when it is not."""
    serve = _HOSTILE.get(scenario)
    if serve is None:
        return False
    try:
        serve(h, entry)
    except (BrokenPipeError, ConnectionResetError):
        entry["client_closed_at"] = time.time()
    return True


def _write(h: Handler, data: bytes) -> None:
    h.wfile.write(data)
    h.wfile.flush()


def _until_closed(h: Handler, entry: dict[str, Any], every: float, data: Any) -> None:
    """Writes `data(n)` every `every` seconds until the client goes away (or HOLD_FOR passes)."""
    deadline = time.time() + HOLD_FOR
    n = 0
    while time.time() < deadline:
        chunk = data(n)
        if chunk:
            _write(h, chunk)
        n += 1
        time.sleep(every)
        if _peer_closed(h):
            break
    entry["client_closed_at"] = time.time()


def _keepalive(h: Handler, entry: dict[str, Any]) -> None:
    h._start_stream()
    _write(h, b"".join(sse(e) for e in [CREATED, *text_events(["Partial"])[:2]]))
    _until_closed(h, entry, 0.05, lambda n: b": ping\n\n")


def _trickle(h: Handler, entry: dict[str, Any]) -> None:
    h._start_stream()
    _write(h, b"".join(sse(e) for e in [CREATED, *text_events(["Partial"])[:2]]) + b"data: ")
    _until_closed(h, entry, 0.05, lambda n: b"x")  # one byte at a time of an event that never ends


def _drip(h: Handler, entry: dict[str, Any]) -> None:
    h._start_stream()
    _write(h, b"".join(sse(e) for e in [CREATED, *text_events([])[:1]]))
    delta = text_events(["tick "])[1]
    _until_closed(h, entry, 0.05, lambda n: sse(delta))  # real data, forever


def _hang_headers(h: Handler, entry: dict[str, Any]) -> None:
    h.close_connection = True
    _until_closed(h, entry, 0.05, lambda n: b"")


def _huge_line(h: Handler, entry: dict[str, Any]) -> None:
    h._start_stream()
    _write(h, sse(CREATED) + b"data: ")
    for _ in range(100):  # 100 MiB in one line
        _write(h, b"x" * (1 << 20))
    _write(h, b"\n\n")


def _big_error(h: Handler, entry: dict[str, Any]) -> None:
    size = 50_000_000
    h.send_response(500)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(size))
    h.end_headers()
    head = b'{"error":{"message":"Overloaded ' + b"y" * 100
    _write(h, head)
    for _ in range((size - len(head)) // (1 << 20)):
        _write(h, b"y" * (1 << 20))
    _write(h, b"y" * ((size - len(head)) % (1 << 20)))


def _bad_gzip(h: Handler, entry: dict[str, Any]) -> None:
    body = b"this is not gzip at all " * 40
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.send_header("content-encoding", "gzip")
    h.send_header("content-length", str(len(body)))
    h.end_headers()
    _write(h, body)


@functools.cache
def gzip_bomb(head: bytes, inflated: int) -> bytes:
    """`head` then `y`s, `inflated` bytes in all, gzipped: ~1/1000 of that on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    parts = [packer.compress(head)]
    block = b"y" * (1 << 20)
    for _ in range((inflated - len(head)) // len(block)):
        parts.append(packer.compress(block))
    return b"".join([*parts, packer.flush()])


def _gzipped(h: Handler, status: int, ctype: str, body: bytes) -> None:
    h.send_response(status)
    h.send_header("content-type", ctype)
    h.send_header("content-encoding", "gzip")
    h.send_header("content-length", str(len(body)))
    h.end_headers()
    _write(h, body)


def _gzip_bomb_error(h: Handler, entry: dict[str, Any]) -> None:
    _gzipped(h, 500, "application/json", gzip_bomb(b'{"error":{"message":"Overloaded ', 64 << 20))


def _gzip_bomb_stream(h: Handler, entry: dict[str, Any]) -> None:
    _gzipped(h, 200, "text/event-stream", gzip_bomb(sse(CREATED) + b"data: ", 256 << 20))  # one 256 MiB line


def _bom(h: Handler, entry: dict[str, Any]) -> None:
    h._start_stream()
    first, second = text_events(["Hello", " world"])[1:3]
    _write(h, b"\xef\xbb\xbf" + f"data: {json.dumps(first)}\n\n".encode() + sse(second) + sse(completed()))


@functools.cache
def many_items_body(count: int = 12_000) -> bytes:
    """~4 MB of reasoning items, each at its own output index."""
    events: list[dict[str, Any]] = [CREATED]
    for i in range(count):
        item = {"id": f"rs_{i}", "type": "reasoning"}
        summary = {"type": "response.reasoning_summary_text.delta", "output_index": i, "summary_index": 0}
        done = {**item, "summary": [{"type": "summary_text", "text": "x"}]}
        events += [
            {"type": "response.output_item.added", "output_index": i, "item": item},
            {**summary, "item_id": f"rs_{i}", "delta": "x"},
            {"type": "response.output_item.done", "output_index": i, "item": done},
        ]
    events += [*text_events(["done"], count), completed()]
    return b"".join(sse(e) for e in events)


def _many_items(h: Handler, entry: dict[str, Any]) -> None:
    h._start_stream()
    _write(h, many_items_body())


def _deep_arguments(h: Handler, entry: dict[str, Any]) -> None:
    h._start_stream()
    arguments = '{"a":' * 5000 + "1" + "}" * 5000
    _write(h, b"".join(sse(e) for e in [CREATED, *call_events("call_deep", "get_weather", arguments), completed()]))


def _ratelimit_wait(h: Handler, entry: dict[str, Any]) -> None:
    h._raw(429, ERRORS[429][0].encode(), "application/json", {"retry-after": "2"})


def _hold(h: Handler, entry: dict[str, Any]) -> None:
    h._start_stream()
    _write(h, sse(CREATED))
    time.sleep(1.0)
    _write(h, b"".join(sse(e) for e in [*text_events(["held"]), completed()]))


_HOSTILE = {
    "keepalive": _keepalive,
    "trickle": _trickle,
    "drip": _drip,
    "hang-headers": _hang_headers,
    "huge-line": _huge_line,
    "big-error": _big_error,
    "bad-gzip": _bad_gzip,
    "gzip-bomb-error": _gzip_bomb_error,
    "gzip-bomb-stream": _gzip_bomb_stream,
    "bom": _bom,
    "many-items": _many_items,
    "deep-arguments": _deep_arguments,
    "hold": _hold,
    "ratelimit-wait": _ratelimit_wait,
}

# ---- end of the misbehaving gateway ----


class FakeServer(ThreadingHTTPServer):
    """The fake gateway; over TLS with `tls` (a server context). Each connection is served on its own
    daemon thread, TLS handshake included: the accept loop never waits on a client, so a client that
    connects and says nothing cannot hold the next one, nor `stop()`."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # two sidecars' dozens of chats at once; the default 5 refuses some

    def __init__(self, port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.gateway = Gateway()
        self.tls = tls

    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> FakeServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Ends the accept loop (within its 0.5 s poll) and closes the listening socket; connections
        still open end on their own timeouts, on daemon threads nothing waits for."""
        self.shutdown()
        self.server_close()

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        if self.tls is not None:  # wrapping does no I/O; the handshake is the connection's thread's
            connection = self.tls.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        return connection, address

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(HANDSHAKE_TIMEOUT)
            try:
                request.do_handshake()
            except (OSError, ValueError):  # no ClientHello in time, a client that distrusts us, a reset
                return
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client gone or timed out is no error of ours
            super().handle_error(request, client_address)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = FakeServer(args.port)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
