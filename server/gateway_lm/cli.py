"""`gateway-lm`: the product's pipeline from a terminal (chat, replay, models, count, usage, credits,
serve)."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from .chats import ChatService
from .gateway.client import GatewayClient
from .gateway.errors import GatewayError
from .gateway.replay import events_from_recording
from .logs import ClientLogHandler, Redactor, configure
from .messages import ROLE_SYSTEM, ROLE_USER, ChatRequest, ErrorPart, PartOut
from .money import usd
from .offer.catalogue import catalogue
from .rpc.pipes import MODE_ENV, MODES, default_mode
from .settings import Settings, updated_settings
from .spend.history import DB_NAME, UsageRecord, UsageStore, utc_day
from .spend.lookups import read_credits
from .stream.adapt import adapt_stream
from .terminal import printable

DEFAULT_MODEL = "openai/gpt-5-mini"


class Output:
    """Parts to the terminal: answer on stdout, the rest on stderr; or JSON lines with --json.
    Everything written goes through the redactor (the gateway may quote the key back) and through
    `printable` with line breaks kept (terminal.py); a gateway's string inside one of our lines is
    made printable where the line is built, line breaks included."""

    def __init__(self, as_json: bool, redact: Callable[[str], str]) -> None:
        self.as_json = as_json
        self.redact = redact

    def out(self, text: str) -> None:
        sys.stdout.write(self.redact(printable(text, lines=True)))

    def err(self, text: str) -> None:
        sys.stderr.write(self.redact(printable(text, lines=True)))

    def parts(self, parts: Iterable[PartOut]) -> None:
        for part in parts:
            if self.as_json:
                self.out(json.dumps(part, ensure_ascii=False) + "\n")
            else:
                self._human(part)
        sys.stdout.flush()

    def _human(self, part: PartOut) -> None:
        if part["type"] == "text":
            self.out(part["value"])
        elif part["type"] == "thinking":
            self.err(part["value"])
        elif part["type"] == "toolCall":
            self.err(f"\n[tool call {printable(part['name'])} {json.dumps(part['input'])}]\n")
        elif part["type"] == "usage":
            self.err(
                f"\nusage: input {part['inputTokens']} (cached {part['cachedTokens']}) · "
                f"output {part['outputTokens']} (reasoning {part['reasoningTokens']}) · "
                f"total {part['totalTokens']}\n"
            )
        elif part["type"] == "finish":
            self.out("\n")
            if part["reason"] != "stop":
                self.err(f"finish: {part['reason']}\n")

    def error(self, error: GatewayError) -> None:
        if self.as_json:
            part: ErrorPart = {"type": "error", "kind": error.kind, "message": error.message, "status": error.status}
            self.out(json.dumps(part, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        self.err(f"error: {error.kind}: {printable(error.message)}\n")


class TerminalParts:
    """A chat's parts printed as they come (chats.Parts); nothing is held back to flush or drop."""

    def __init__(self, out: Output) -> None:
        self.out = out

    def post(self, parts: list[PartOut]) -> None:
        self.out.parts(parts)

    def flush(self) -> None:
        pass

    def drop(self) -> None:
        pass


def settings_from(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    if getattr(args, "base_url", None):
        overrides["baseUrl"] = args.base_url
    if getattr(args, "idle_timeout", None) is not None:
        overrides["idleTimeout"] = args.idle_timeout
    if getattr(args, "max_retries", None) is not None:
        overrides["maxRetries"] = args.max_retries
    settings, problems = updated_settings(Settings(), overrides)
    if problems:
        options = {"baseUrl": "--base-url", "idleTimeout": "--idle-timeout", "maxRetries": "--max-retries"}
        raise GatewayError("bad_request", "; ".join(f"{options[name]}: {why}" for name, why in problems.items()))
    return settings


async def run_chat(args: argparse.Namespace, out: Output) -> None:
    settings = settings_from(args)
    messages: list[dict[str, Any]] = []
    if args.system:
        messages.append({"role": ROLE_SYSTEM, "content": [{"type": "text", "value": args.system}]})
    messages.append({"role": ROLE_USER, "content": [{"type": "text", "value": args.prompt}]})
    request = ChatRequest.model_validate({"model": args.model, "messages": messages})
    chats = ChatService(keeps_accounts=False)  # one chat, then the process ends: nothing to keep
    chats.apply(settings)
    try:
        await chats.chat(request, "cli", TerminalParts(out))  # the key from the environment
    finally:
        await chats.aclose()


def run_replay(args: argparse.Namespace, out: Output) -> None:
    body = Path(args.file).read_bytes()
    parts: list[PartOut] = []
    try:
        adapt_stream(events_from_recording(body), parts)
    finally:
        out.parts(parts)  # what the stream said before failing is still shown


async def run_models(args: argparse.Namespace, out: Output) -> None:
    settings = settings_from(args)
    client = GatewayClient(settings)
    try:
        models = catalogue(await client.list_models(), settings.outputReservation)
    finally:
        await client.aclose()
    if out.as_json:
        for model in models:
            # json.dumps, not model_dump_json: pydantic's encoder refuses a lone surrogate, which
            # `printable` writes as its JSON escape.
            out.out(json.dumps(model.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n")
        return
    for model in models:
        tools = "tools" if model.capabilities.toolCalling else "no tools"
        out.out(f"{printable(model.id)}\t{printable(model.name)}\tcontext {model.contextWindow}\t{tools}\n")


def run_count(args: argparse.Namespace, out: Output) -> None:
    from .tokens.tokenizer import count_request

    body = json.loads(Path(args.file).read_text(encoding="utf-8"))
    if not isinstance(body, dict):
        raise GatewayError("bad_request", f"{args.file} does not hold a JSON object")
    out.out(f"{count_request(body, args.model or str(body.get('model') or ''))}\n")


def run_serve(args: argparse.Namespace, out: Output) -> None:
    from .rpc.serve import serve

    serve(args.stdio)


# ---- `gateway-lm usage` and `gateway-lm credits`: the history the extension's sidecars record, and
# the team's balance, from a terminal (rfcs/0006-spend.md) ----

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


def add_spend_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    requested = record["requestedModel"]
    model = record["model"] + (f" (for {requested}, a team routing rule)" if requested else "")
    return (
        f"{when}\t{printable(model)}\t{printable(record['provider'] or '-')}\tin {record['inputTokens']}"
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


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="gateway-lm", description="Vercel AI Gateway models, from the terminal.")
    commands = top.add_subparsers(dest="command", required=True)

    chat = commands.add_parser("chat", help="send one prompt and stream the answer")
    chat.add_argument("--base-url")
    chat.add_argument("--model", default=DEFAULT_MODEL)
    chat.add_argument("--system")
    chat.add_argument("--json", action="store_true", help="print parts as JSON lines")
    chat.add_argument("--idle-timeout", type=float)
    chat.add_argument("--max-retries", type=int)
    chat.add_argument("prompt")

    replay = commands.add_parser("replay", help="feed a recorded stream through the adapter")
    replay.add_argument("--json", action="store_true")
    replay.add_argument("file")

    models = commands.add_parser("models", help="list the gateway's language models")
    models.add_argument("--base-url")
    models.add_argument("--json", action="store_true")

    count = commands.add_parser("count", help="estimate the input tokens of a request body")
    count.add_argument("--model")
    count.add_argument("file")

    add_spend_commands(commands)

    serve = commands.add_parser("serve", help="run the JSON-RPC sidecar on stdio (started by the extension)")
    serve.add_argument(
        "--stdio",
        choices=MODES,
        default=default_mode(sys.platform, os.environ),
        help=(
            "how stdin and stdout are read and written: 'loop' on the event loop (the default but on Windows),"
            " 'threads' by a reader and a writer thread (the default on Windows, where the event loop cannot"
            f" watch the standard handles); {MODE_ENV} sets the default for a process and its children (tests)"
        ),
    )
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    redact = Redactor()  # the keys in the environment: the CLI's only keys
    out = Output(bool(getattr(args, "json", False)), redact)
    if args.command != "serve":  # the sidecar sets up its own logging
        configure(ClientLogHandler(redact, lambda _, message: out.err(printable(message) + "\n")), "warning")
    try:
        dispatch(args, out)
    except GatewayError as error:
        out.error(error)
        return 1
    except KeyboardInterrupt:
        return 130
    except (OSError, ValueError) as error:
        out.error(GatewayError("bad_request", f"{type(error).__name__}: {error}"))
        return 1
    except Exception as error:
        out.error(GatewayError("internal", f"internal error: {type(error).__name__}: {error}"))
        return 1
    return 0


def dispatch(args: argparse.Namespace, out: Output) -> None:
    if args.command == "chat":
        asyncio.run(run_chat(args, out))
    elif args.command == "replay":
        run_replay(args, out)
    elif args.command == "models":
        asyncio.run(run_models(args, out))
    elif args.command == "count":
        run_count(args, out)
    elif args.command == "usage":
        run_usage(args, out)
    elif args.command == "credits":
        asyncio.run(run_credits(settings_from(args), out))
    elif args.command == "serve":
        run_serve(args, out)


def entry() -> NoReturn:
    sys.exit(main())
