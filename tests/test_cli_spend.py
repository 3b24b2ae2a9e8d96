"""`gateway-lm usage` and `gateway-lm credits` as a user runs them: subprocesses against a usage
history the sidecar's store wrote and against the fake gateway."""

from __future__ import annotations

import json
from pathlib import Path

from fake_gateway import FakeServer
from gateway_lm.history import DB_NAME, UsageStore
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
