"""The fake gateway's money: `GET /v1/credits`, `GET /v1/generation?id=…` in the documented shapes
(vercel.com/docs/ai-gateway/capabilities/usage), and the `billed*` chat scenarios whose generations
those lookups find.

- Credits: decimal strings; the key `no-credits` gets 403, `credits-500` a 500, `credits-hostile`
  values no number can be read from, `credits-hostile-text` a 500 whose message is HOSTILE_TEXT.
- A `billed*` answer's response id is a fresh `gen_…` id (the `billed-meta` one names it only in
  `providerMetadata.gateway.generationId`, with a `resp_…` response id). Its generation is "not
  found" (404) until 300 ms after the answer (`billed`), for the first N lookups
  (`billed-after:N`), or for ever (`billed-never`); `billed-cost:USD` is found at once and bills
  USD. An unknown id is a 404 too.
Every lookup is recorded in `Gateway.lookups` and served back at `GET /_lookups`.
"""

from __future__ import annotations

import math
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

READY_AFTER = 0.3  # seconds after the answer before the gateway has recorded the generation
TOTAL_COST = 0.00123
PROVIDER = "fakecloud"
CREDITS = {"balance": "95.50", "total_used": "4.50"}
HOSTILE_CREDITS = b'{"balance": "NaN", "total_used": "1e400"}'
# A command link, an icon, an OSC 52 clipboard write, a screen clear, a carriage return and a forged
# line (fake_gateway.py serves it in model names and chat errors too).
HOSTILE_TEXT = (
    "[Fix it](command:workbench.action.openGlobalKeybindings) $(loading~spin)"
    " \x1b]52;c;aGk=\x07\x1b[2J\r\nerror: auth: forged"
)
NOT_FOUND = {"error": {"message": "Generation not found", "type": "not_found"}}


def serve_get(h: Any, gateway: Any) -> bool:
    """Answers a GET of credits or a generation; False for any other path."""
    url = urlsplit(h.path)
    path = url.path.rstrip("/")
    if path.endswith("/credits"):
        key = (h.headers.get("authorization") or "").removeprefix("Bearer ")
        gateway.record_lookup({"path": "credits", "authorization": h.headers.get("authorization")})
        if key == "no-credits":
            h._json(403, {"error": {"message": "This key cannot read credits", "type": "forbidden"}})
        elif key == "credits-500":
            h._json(500, {"error": {"message": "Internal error", "type": "internal_server_error"}})
        elif key == "credits-hostile-text":
            h._json(500, {"error": {"message": f"Credits unavailable {HOSTILE_TEXT}", "type": "internal_server_error"}})
        elif key == "credits-hostile":
            h._raw(200, HOSTILE_CREDITS, "application/json")
        else:
            h._json(200, CREDITS)
        return True
    if path.endswith("/generation"):
        generation_id = (parse_qs(url.query).get("id") or [""])[0]
        status, payload = gateway.generation(generation_id)
        gateway.record_lookup({"path": "generation", "id": generation_id, "status": status, "at": time.time()})
        h._json(status, payload)
        return True
    if path == "/_lookups":
        with gateway.lock:
            h._json(200, gateway.lookups)
        return True
    return False


class Generations:
    """The generations the fake has served, and when each may be found."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.count = 0

    def new_id(self) -> str:
        self.count += 1
        return f"gen_{self.count:026d}"

    def add(self, generation_id: str, model: str, scenario: str) -> None:
        _, _, arg = scenario.partition(":")
        data = generation_data(generation_id, model)
        if scenario.startswith("billed-cost:"):
            data["total_cost"], arg = float(arg), "0"
        self.records[generation_id] = {
            "data": data,
            "ready_at": math.inf if scenario == "billed-never" else time.time() + (0 if arg else READY_AFTER),
            "misses_left": int(arg) if arg else 0,
        }

    def look_up(self, generation_id: str) -> tuple[int, dict[str, Any]]:
        record = self.records.get(generation_id)
        if record is None:
            return 404, NOT_FOUND
        if record["misses_left"] > 0 or time.time() < record["ready_at"]:
            record["misses_left"] -= 1
            return 404, NOT_FOUND
        return 200, {"data": record["data"]}


def generation_data(generation_id: str, model: str) -> dict[str, Any]:
    return {
        "id": generation_id,
        "total_cost": TOTAL_COST,
        "upstream_inference_cost": 0,
        "usage": TOTAL_COST,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model": model,
        "is_byok": False,
        "provider_name": PROVIDER,
        "streamed": True,
        "finish_reason": "stop",
        "latency": 120,
        "generation_time": 450,
        "native_tokens_prompt": 42,
        "native_tokens_completion": 7,
        "native_tokens_reasoning": 3,
        "native_tokens_cached": 10,
        "native_tokens_cache_creation": 5,
        "billable_web_search_calls": 0,
    }
