"""`gateway-lm usage` and `gateway-lm credits`: the history the extension's sidecars record, and the
team's balance, from a terminal (rfcs/0006-spend.md)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Protocol

from .client import GatewayClient
from .settings import Settings
from .spend.history import DB_NAME, UsageRecord, UsageStore, utc_day
from .spend.lookups import read_credits
from .spend.prices import usd
from .terminal import printable


class Output(Protocol):
    """What these commands need of cli.Output (nothing here imports cli.py)."""

    as_json: bool

    def out(self, text: str) -> None: ...

    def err(self, text: str) -> None: ...


EXTENSION_ID = "ai-gateway-lm.ai-gateway-lm"  # package.json's publisher.name: its global storage folder
STATE_DIR_ENV = "AI_GATEWAY_LM_STATE_DIR"


def default_state_dir() -> Path:
    """VS Code's global storage of the extension, where its sidecars keep `usage.sqlite3`."""
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override)
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "Code" / "User" / "globalStorage" / EXTENSION_ID


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    usage = commands.add_parser("usage", help="print the recorded usage (newest first) and today's spend")
    usage.add_argument("--since", type=datetime.date.fromisoformat, help="first UTC day, YYYY-MM-DD")
    usage.add_argument("--until", type=datetime.date.fromisoformat, help="last UTC day, YYYY-MM-DD")
    usage.add_argument("--limit", type=int, default=5000)
    usage.add_argument(
        "--state-dir", type=Path, help=f"where usage.sqlite3 is (default: ${STATE_DIR_ENV} or VS Code's)"
    )
    usage.add_argument("--json", action="store_true", help="print {records, dayTotal} as gateway/usage answers")

    credits = commands.add_parser("credits", help="print the team's AI Gateway credit balance")
    credits.add_argument("--base-url")
    credits.add_argument("--json", action="store_true")


def run_usage(args: argparse.Namespace, out: Output) -> None:
    state_dir: Path = args.state_dir or default_state_dir()
    records: list[UsageRecord] = []
    total = 0.0
    if (state_dir / DB_NAME).exists():  # never create one where no window has recorded anything
        store = UsageStore(state_dir / DB_NAME, retention_days=None)  # retention is the windows' setting
        try:
            since = args.since.isoformat() if args.since else None
            until = args.until.isoformat() if args.until else None
            records, total = store.records(since, until, args.limit), store.day_total()
        finally:
            store.close()
    if out.as_json:
        out.out(json.dumps({"records": records, "dayTotal": total}, ensure_ascii=False) + "\n")
        return
    if not records:
        out.err(f"no usage recorded in {printable(str(state_dir / DB_NAME))} for these days\n")
    for record in records:
        out.out(_line(record))
    out.err(f"today ({utc_day()}, UTC): {usd(total)} · {len(records)} requests listed · ≈ marks an estimate\n")


def _line(record: UsageRecord) -> str:
    cost = "?" if record["cost"] is None else ("" if record["billed"] else "≈") + usd(record["cost"])
    # Every text of a record is the gateway's (the model id from its list, the provider from its
    # bill, the time from a shared file): printed as text, never as the terminal's commands.
    when = printable(record["time"].replace("T", " ")[:19])
    return (
        f"{when}\t{printable(record['model'])}\t{printable(record['provider'] or '-')}\tin {record['inputTokens']}"
        f" (cached {record['cachedTokens']}, written {record['cacheWriteTokens']})\tout {record['outputTokens']}"
        f" (reasoning {record['reasoningTokens']})\t{cost}\n"
    )


async def run_credits(settings: Settings, out: Output) -> None:
    client = GatewayClient(settings)
    try:
        credits = await read_credits(client, None)  # the key from the environment, as `chat` uses
    finally:
        await client.aclose()
    if out.as_json:
        out.out(json.dumps(credits) + "\n")
    elif credits["balance"] is None:
        out.err("this key cannot read the team's credits\n")
    else:
        used = "" if credits["totalUsed"] is None else f" · used {usd(credits['totalUsed'])}"
        out.out(f"balance {usd(credits['balance'])}{used}\n")
