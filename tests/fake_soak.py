"""The fake gateway's soak scenario (`soak`, for `bench/soak.mjs`): an agent's turns, each answered
with text and a tool call or with text alone, Copilot's summarisation requests with a summary, and
the fault the bench asks for.

The bench names each turn and its fault in the newest item of the request (the tool result or the
user's message it adds for that turn): `[soak:TURN:FAULT:TIMES]`. FAULT (`reset`, `429`, `500`,
`stall`, or empty) hits the turn's first TIMES attempts, so a retry of the same turn can succeed:
- `reset`: a few text deltas, then the connection is reset (no last chunk, no terminal event);
- `429`: `retry-after: 1`; `500`: the gateway's internal error, both before any event;
- `stall`: a few text deltas, then nothing for STALL_FOR seconds (longer than the soak's
  `idleTimeout`, so the sidecar must give up first), then a reset;
- `kill`: a few text deltas, then nothing for KILL_PAUSE seconds, then a reset: the bench kills the
  sidecar when it sees the first part, and the pause makes that mid-stream wherever the parts pass
  through (a real extension host forwards them through the workbench, after the answer could end).
Each attempt's response id is `resp_soak_TURN_ATTEMPT`: the usage record the sidecar writes carries
it, so the bench can tell which turn each record belongs to. The request body is not kept in the
request log (a thousand growing histories would be the fake's memory, not the product's).
"""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

from fake_agent import summarisation_form

if TYPE_CHECKING:
    from fake_gateway import Handler

MARKER = re.compile(r"\[soak:(\d+):(\w*):(\d+)\]")
STALL_FOR = 5.0
KILL_PAUSE = 1.0
RETRY_AFTER = "1"
GAP = 0.001  # between events: a model producing tokens, so that a turn has a middle
WORDS = "Reading the next file to see where the handler registers its routes and which tests cover it".split()


def serve_soak(h: Handler, body: dict[str, Any], entry: dict[str, Any]) -> None:
    from fake_gateway import ERRORS, call_events, response_obj, serve_error, text_events

    entry.pop("body", None)
    entry.pop("providerOptions", None)
    inputs = body.get("input") or []
    match = MARKER.search(_text(inputs[-1]) if inputs and isinstance(inputs[-1], dict) else "")
    turn, fault, times = (match.group(1), match.group(2), int(match.group(3))) if match else ("0", "", 0)
    attempt = h.server.gateway.bump(f"soak-{turn}")
    failing = fault if attempt <= times else ""
    entry.update(soak_turn=int(turn), attempt=attempt, fault=failing)
    if failing == "429":
        h._raw(429, ERRORS[429][0].encode(), "application/json", {"retry-after": RETRY_AFTER})
        return
    if failing == "500":
        serve_error(h, 500)
        return
    response_id = f"resp_soak_{turn}_{attempt}"
    created = {"type": "response.created", "response": response_obj("in_progress", id=response_id)}
    h._start_stream()
    words = [f" {w}" for w in WORDS]
    if failing in ("reset", "stall", "kill"):
        if h._send(entry, [created, *text_events(words)[:6]], gap=GAP) and failing != "reset":
            time.sleep(STALL_FOR if failing == "stall" else KILL_PAUSE)
        h._reset()
        return
    size = len(json.dumps(body))
    usage = {"input_tokens": size // 4, "output_tokens": 40, "total_tokens": size // 4 + 40}
    done = {"type": "response.completed", "response": response_obj("completed", id=response_id, usage=usage)}
    if summarisation_form(body) is not None:
        summary = f"<summary>Turn {turn}: the files read so far, what each holds, what is left.</summary>"
        h._send(entry, [created, *text_events([summary]), done], gap=GAP)
        return
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("name")]
    events = text_events(words)
    if tools and int(turn) % 4 != 3:  # three turns in four call a tool, as an agent reading its way
        tool = tools[int(turn) % len(tools)]
        arguments = json.dumps({"path": f"src/module_{int(turn) % 97}.py", "startLine": 1, "endLine": 200})
        events += call_events(f"call_soak_{turn}_{attempt}", str(tool["name"]), arguments, index=1)
    h._send(entry, [created, *events, done], gap=GAP)


def _text(item: dict[str, Any]) -> str:
    for key in ("output", "content"):
        value = item.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return ""
