"""`gateway-lm usage` and `gateway-lm credits` as a user runs them: subprocesses against a usage
history the sidecar's store wrote and against the fake gateway."""

from __future__ import annotations

import json
from pathlib import Path

from fake_gateway import FakeServer
from gateway_lm.spend.history import DB_NAME, UsageStore
from test_cli import cli
from test_history import now, record


def history(state_dir: Path) -> None:
    store = UsageStore(state_dir / DB_NAME, 90)
    store.put("a", record("gen_a", "2026-01-02T10:00:00.000Z", cost=0.25))
    store.put("b", record("resp_b", "2026-01-03T10:00:00.000Z", cost=0.0004, billed=False))
    store.put("c", record("gen_c", now(), cost=0.5))
    store.close()


def test_usage_prints_the_history_newest_first(tmp_path: Path) -> None:
    history(tmp_path)
    run = cli("usage", "--since", "2026-01-01", "--until", "2026-01-03", env={"AI_GATEWAY_LM_STATE_DIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["2026-01-03 10:00:00", "2026-01-02 10:00:00"]
    assert lines[0].endswith("≈$0.0004") and lines[1].endswith("$0.25"), "an estimate is marked"
    assert "today" in run.stderr and "$0.50" in run.stderr


def test_usage_json_is_what_gateway_usage_answers(tmp_path: Path) -> None:
    history(tmp_path)
    run = cli("usage", "--json", "--state-dir", str(tmp_path))
    answer = json.loads(run.stdout)
    assert [r["id"] for r in answer["records"]] == ["gen_c", "resp_b", "gen_a"]
    assert answer["dayTotal"] == 0.5 and answer["records"][1]["billed"] is False


def test_usage_without_a_history_creates_none(tmp_path: Path) -> None:
    run = cli("usage", "--state-dir", str(tmp_path / "none"))
    assert run.returncode == 0 and run.stdout == "" and "no usage recorded" in run.stderr
    assert not (tmp_path / "none").exists()


def test_usage_rejects_a_bad_date(tmp_path: Path) -> None:
    run = cli("usage", "--since", "yesterday", "--state-dir", str(tmp_path))
    assert run.returncode != 0 and "Traceback" not in run.stderr and "--since" in run.stderr


def test_credits(gateway: FakeServer) -> None:
    run = cli("credits", "--base-url", gateway.base_url)
    assert run.returncode == 0 and run.stdout == "balance $95.50 · used $4.50\n", run.stderr
    run = cli("credits", "--json", "--base-url", gateway.base_url)
    assert json.loads(run.stdout) == {"balance": 95.5, "totalUsed": 4.5}
    run = cli("credits", "--base-url", gateway.base_url, env={"AI_GATEWAY_API_KEY": "no-credits"})
    assert run.returncode == 0 and run.stdout == "" and "cannot read" in run.stderr
    run = cli("credits", "--base-url", gateway.base_url, env={"AI_GATEWAY_API_KEY": "credits-500"})
    assert run.returncode == 1 and "upstream" in run.stderr and "Traceback" not in run.stderr


# A terminal obeys what it is sent: an OSC 52 sequence writes the clipboard, ESC [2J clears the
# screen, a carriage return or a line break forges a line, C1's CSI and a bidi override do the same
# in other guises. Each is the gateway's to send: the model id from its list, the provider from its bill.
HOSTILE = {
    "model": "evil/model\x1b]52;c;aGVsbG8=\x07",
    "provider": "cloud\x1b[2J\x1b[H\r2026-01-01 00:00:00\tforged/model\tcloud\tin 1",
}
FORGED = "fake/text\n2026-01-01 00:00:00\tforged\x9b31m\u202etxet"
UNSAFE = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]] + ["\u202e", "\u2028"]


def test_usage_prints_a_hostile_record_as_text(tmp_path: Path) -> None:
    store = UsageStore(tmp_path / DB_NAME, 90)
    store.put("a", {**record("gen_a", now()), **HOSTILE})
    store.put("b", {**record("gen_b", now()), "model": FORGED})
    store.close()
    run = cli("usage", "--state-dir", str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert not [c for c in run.stdout if c in UNSAFE], "no control character reaches the terminal"
    lines = run.stdout.splitlines()
    assert len(lines) == 2 and all(line.count("\t") == 5 for line in lines), "one line per record, no forged field"
    assert "evil/model\\u001b]52;c;aGVsbG8=\\u0007" in run.stdout, "shown, escaped"
    assert "fake/text\\n2026-01-01 00:00:00\\tforged\\u009b31m\\u202etxet" in run.stdout
    assert "cloud\\u001b[2J\\u001b[H\\r2026" in run.stdout
    # --json is JSON that says the same, with every control character escaped too
    run = cli("usage", "--json", "--state-dir", str(tmp_path))
    assert not [c for c in run.stdout.rstrip("\n") if c in UNSAFE]
    records = json.loads(run.stdout)["records"]
    assert sorted(r["model"] for r in records) == sorted([HOSTILE["model"], FORGED])
    assert HOSTILE["provider"] in [r["provider"] for r in records]
