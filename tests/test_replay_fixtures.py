"""Every recorded stream, replayed through the adapter, gives exactly the reviewed parts.

`fixtures/expected-parts.json` was reviewed by hand against each recording (provenance in
`fixtures/PROVENANCE.md`); a change in what a user would see fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway_lm.gateway.errors import GatewayError
from gateway_lm.gateway.replay import events_from_recording
from gateway_lm.messages import PartOut
from gateway_lm.stream.adapt import adapt_stream

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "expected-parts.json").read_text(encoding="utf-8"))


def replay(path: Path) -> tuple[list[PartOut], str | None]:
    parts: list[PartOut] = []
    try:
        adapt_stream(events_from_recording(path.read_bytes()), parts)
    except GatewayError as error:
        return parts, error.kind
    return parts, None


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_fixture_replays_exactly(case: dict[str, Any]) -> None:
    parts, error = replay(FIXTURES / case["file"])
    text = "".join(p["value"] for p in parts if p["type"] == "text")
    thinking = "".join(p["value"] for p in parts if p["type"] == "thinking")
    calls = [[p["name"], p["input"]] for p in parts if p["type"] == "toolCall"]
    usage = [[p["inputTokens"], p["outputTokens"]] for p in parts if p["type"] == "usage"]
    finish = [p["reason"] for p in parts if p["type"] == "finish"]
    assert error == case["error"]
    assert len(text) == case["text_len"] and text.startswith(case["text_start"])
    assert len(thinking) == case["thinking_len"]
    assert calls == case["calls"]
    assert (usage[0] if usage else None) == case["usage"]
    assert (finish[0] if finish else None) == case["finish"]
    assert len({p["callId"] for p in parts if p["type"] == "toolCall"}) == len(calls), "a call emitted twice"
    if finish:
        assert parts[-1]["type"] == "finish", "finish is the last part"


def test_every_recording_is_covered() -> None:
    recordings = {str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/*") if p.suffix in (".sse", ".jsonl")}
    assert recordings == {c["file"] for c in EXPECTED}


def test_text_matches_the_recorded_final_text() -> None:
    # The final text of the response equals what was streamed: nothing lost, nothing doubled.
    path = FIXTURES / "prism-php/openai-plain-text.sse"
    parts, _ = replay(path)
    text = "".join(p["value"] for p in parts if p["type"] == "text")
    done = [e for e in events_from_recording(path.read_bytes()) if e.get("type") == "response.output_text.done"]
    assert text == done[0]["text"]


def test_cli_replay_json_prints_one_part_per_line() -> None:
    path = FIXTURES / "vercel-ai/azure-openai-single-function-call.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "gateway_lm", "replay", "--json", str(path)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    parts = [json.loads(line) for line in run.stdout.splitlines()]
    assert [p["type"] for p in parts] == ["toolCall", "usage", "finish"]
    assert parts[0]["input"] == {"location": "San Francisco"}


def test_cli_replay_of_a_failed_stream_exits_1_with_one_line() -> None:
    path = FIXTURES / "vercel-ai/openai-error-then-response-failed.jsonl"
    run = subprocess.run([sys.executable, "-m", "gateway_lm", "replay", str(path)], capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr.startswith("error: rate_limited: ") and run.stderr.count("\n") == 1
    assert "Traceback" not in run.stderr
