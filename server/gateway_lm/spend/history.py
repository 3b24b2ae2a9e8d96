"""The usage history: one SQLite file, `<stateDir>/usage.sqlite3`, shared by every window's sidecar
and read by `gateway-lm usage` (rfcs/0006-spend.md).

Two windows write to it at once: WAL lets readers go on while one writes, `busy_timeout` makes a
writer wait for the other instead of failing, and each record is one statement (an upsert by the
chat's key), so a record is whole or absent. WAL needs every process on one host (its index is
shared memory; https://sqlite.org/wal.html): on a network drive, where a redirected %APPDATA% puts
VS Code's storage, the history keeps a rollback journal instead, as it does wherever SQLite refuses
WAL. Rows are read back as untrusted: another version or a damaged file may hold anything, and a row
that does not read as a record is skipped.
"""

from __future__ import annotations

import datetime
import logging
import math
import ntpath
import re
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict

from ..messages import GROUP_PATTERN, MAX_GROUP, MAX_MODEL_ID, GroupId, ModelId
from ..stream.usage import MAX_ID, MAX_PROVIDER, MAX_TIME, MAX_TOKEN_COUNT, MAX_USD, bounded_saving, bounded_usd

log = logging.getLogger(__name__)

DB_NAME = "usage.sqlite3"
BUSY_TIMEOUT_MS = 5000
# The spend guard reads today's total on a chat's path: it waits at most this long for a lock another
# window (or a write of ours) holds, then the ledger uses what it last read (rfcs/0006-spend.md).
GUARD_READ_TIMEOUT_S = 0.5
DEFAULT_LIMIT = 5000
MAX_LIMIT = 50_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    key TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    time TEXT NOT NULL,
    day TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    cost REAL,
    billed INTEGER NOT NULL,
    byok INTEGER,
    grp TEXT,
    requested_model TEXT,
    cache_saved REAL
);
CREATE INDEX IF NOT EXISTS usage_day ON usage (day);
CREATE INDEX IF NOT EXISTS usage_time ON usage (time);
"""
_FIELDS = (
    ("id", "id"),
    ("time", "time"),
    ("model", "model"),
    ("provider", "provider"),
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cached_tokens", "cachedTokens"),
    ("cache_write_tokens", "cacheWriteTokens"),
    ("reasoning_tokens", "reasoningTokens"),
    ("cost", "cost"),
    ("billed", "billed"),
    ("byok", "byok"),
    ("grp", "group"),
    ("requested_model", "requestedModel"),
    ("cache_saved", "cacheSaved"),
)
_COLUMNS = ", ".join(column for column, _ in _FIELDS)
_UPSERT = (
    f"INSERT INTO usage (key, day, {_COLUMNS}) VALUES (?, ?, {', '.join('?' for _ in _FIELDS)}) "
    f"ON CONFLICT (key) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c, _ in _FIELDS)}"
)


_Id = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
_Time = Annotated[str, Field(min_length=1, max_length=MAX_TIME)]
_Provider = Annotated[str, Field(min_length=1, max_length=MAX_PROVIDER)]
_Count = Annotated[int, Field(ge=0, le=MAX_TOKEN_COUNT)]


class UsageRecord(TypedDict):
    """One request's usage: the billed cost when the gateway's lookup answered, else the estimate.
    Every field has its bound (usage.py), here for the contract, which carries them to the extension."""

    id: _Id  # the response id, or a uuid when there was none
    time: _Time  # ISO 8601, UTC
    model: ModelId
    provider: _Provider | None
    inputTokens: _Count
    outputTokens: _Count
    cachedTokens: _Count
    cacheWriteTokens: _Count
    reasoningTokens: _Count
    cost: Annotated[float, Field(ge=0, le=MAX_USD)] | None  # USD
    billed: bool  # True: the gateway's total_cost; False: our estimate from the model's prices
    byok: bool | None
    group: GroupId | None  # the provider group whose key paid (messages.GroupId); None: the default key
    # The model the user picked, when a team routing rule had another answer it: `model` is the one
    # that answered, whose prices the cost is in (rfcs/0006-spend.md, "A routing rule's rewrite").
    requestedModel: ModelId | None
    # USD the prompt cache saved, by list prices (spend/prices.py cache_saved): negative when its writes
    # cost more than its reads saved; None: unknown (no price, or a record older than the column)
    cacheSaved: Annotated[float, Field(ge=-MAX_USD, le=MAX_USD)] | None


class Every:
    """Every provider group's spend (`day_total`), told apart from None, the default key's."""


EVERY = Every()


def _add_column(db: sqlite3.Connection, column: str, kind: str) -> None:
    """A history written before a column was added lacks it: added, NULL in its rows. `grp`: before
    provider groups, its rows the default key's, which they were; `requested_model`: before routing
    rules, the model requested answered; `cache_saved`: before the cache's saving was kept, unknown.
    Two windows may add it at once: the loser's duplicate is fine."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(usage)").fetchall()}
    if column in columns:
        return
    try:
        db.execute(f"ALTER TABLE usage ADD COLUMN {column} {kind}")
    except sqlite3.OperationalError:
        columns = {row[1] for row in db.execute("PRAGMA table_info(usage)").fetchall()}
        if column not in columns:
            raise


DRIVE_REMOTE = 4  # GetDriveTypeW: "The drive is a remote (network) drive."


def on_network_drive(
    path: Path | str, platform: str = sys.platform, drive_type: Callable[[str], int] | None = None
) -> bool:
    r"""Whether `path` is on a network share as Windows names one: a UNC path (\\server\share\…,
    \\?\UNC\server\share\…; folder redirection puts %APPDATA% there) or a drive that GetDriveTypeW
    reports as DRIVE_REMOTE (a mapped drive letter). `drive_type` stands for GetDriveTypeW: a root,
    with its trailing backslash, to a DRIVE_* number. Off Windows, False."""
    if platform != "win32":
        return False
    drive = ntpath.splitdrive(str(path))[0].replace("/", "\\")
    if not drive:
        return False
    long_form = drive.startswith(("\\\\?\\", "\\\\.\\"))  # \\?\C:, \\?\UNC\…, \\?\Volume{…}
    rest = drive[4:] if long_form else drive
    if rest.upper().startswith("UNC\\") or (not long_form and drive.startswith("\\\\")):
        return True
    root = rest if len(rest) == 2 and rest[1] == ":" else drive  # X: as X:\, a volume by its own name
    return (drive_type or _drive_type)(root + "\\") == DRIVE_REMOTE


if sys.platform == "win32":
    import ctypes

    def _drive_type(root: str) -> int:
        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        kernel32.GetDriveTypeW.argtypes = [ctypes.c_wchar_p]
        kernel32.GetDriveTypeW.restype = ctypes.c_uint
        return int(kernel32.GetDriveTypeW(root))

else:

    def _drive_type(root: str) -> int:
        return 0  # DRIVE_UNKNOWN: there are no drives to ask about


def set_journal(db: sqlite3.Connection, network: bool) -> bool:
    """WAL, or on a network drive a rollback journal (DELETE); returns whether it is WAL. SQLite may
    keep another mode than the one asked for: a VFS without shared memory keeps its rollback journal
    rather than take WAL, and leaving WAL needs the file to itself (another window may have it open)."""
    if network:
        try:
            mode = db.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
        except sqlite3.OperationalError as error:  # "database is locked"
            mode = "wal"
            log.warning("usage history: still in WAL on a network drive (%s); the next start leaves it", error)
        else:
            log.info("usage history: on a network drive, where SQLite's WAL does not work; a rollback journal")
    else:
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            log.info("usage history: SQLite kept its %s journal rather than WAL", mode)
    wal = str(mode).lower() == "wal"
    if wal:  # durable but for the last commits on power loss; a rollback journal keeps FULL, the default,
        db.execute("PRAGMA synchronous = NORMAL")  # since NORMAL there can corrupt the file on power loss
    return wal


def utc_day(when: datetime.datetime | None = None) -> str:
    return (when or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%d")


class UsageStore:
    """One connection, used from worker threads (never the event loop: a write may wait for another
    window's up to BUSY_TIMEOUT_MS)."""

    def __init__(
        self, path: Path, retention_days: int | None, on_network: Callable[[Path], bool] = on_network_drive
    ) -> None:
        self.path = path
        self.retention_days = retention_days
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: each statement is its own transaction, held for as short as it takes.
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.wal = set_journal(self._db, on_network(path))
            self._db.executescript(_SCHEMA)
            _add_column(self._db, "grp", "TEXT")
            _add_column(self._db, "requested_model", "TEXT")
            _add_column(self._db, "cache_saved", "REAL")
        except sqlite3.Error:
            self._db.close()
            raise
        self._pruned_on = ""
        if retention_days is not None:  # None: a reader that keeps what the windows keep (the CLI)
            self.prune()

    @classmethod
    def open(cls, state_dir: str | None, retention_days: int | None) -> UsageStore | None:
        """The store in `state_dir`, None when there is none; raises sqlite3.Error or OSError when it
        cannot be opened (the ledger says why and tries again later)."""
        if not state_dir:
            return None
        return cls(Path(state_dir) / DB_NAME, retention_days)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def put(self, key: str, record: UsageRecord) -> None:
        """Adds the record, or replaces the one with the same key (the estimate, once billed)."""
        if self.retention_days is not None and utc_day() != self._pruned_on:  # once a day in a long-lived window
            self.prune()
        row = [record[name] for _, name in _FIELDS]  # type: ignore[literal-required]
        with self._lock:
            self._db.execute(_UPSERT, [key, record["time"][:10], *row])

    def retain(self, days: int) -> None:
        """A new retention, applied by the next write."""
        if days != self.retention_days:
            self.retention_days, self._pruned_on = days, ""

    def prune(self) -> int:
        if self.retention_days is None:
            return 0
        cutoff = utc_day(datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=self.retention_days))
        with self._lock:
            removed = self._db.execute("DELETE FROM usage WHERE day < ?", (cutoff,)).rowcount
        self._pruned_on = utc_day()
        if removed:
            log.info("usage history: %d records older than %d days removed", removed, self.retention_days)
        return removed

    def records(
        self, since: str | None = None, until: str | None = None, limit: int = DEFAULT_LIMIT
    ) -> list[UsageRecord]:
        """The newest `limit` records of the days [since, until] (UTC), newest first."""
        query = f"SELECT {_COLUMNS} FROM usage WHERE day >= ? AND day <= ? ORDER BY time DESC LIMIT ?"
        bounds = (since or "", until or "9999-12-31", min(max(limit, 0), MAX_LIMIT))
        with self._lock:
            rows = self._db.execute(query, bounds).fetchall()
        records = [r for r in (_record(row) for row in rows) if r is not None]
        if len(records) < len(rows):
            log.warning("usage history: %d unreadable records skipped", len(rows) - len(records))
        return records

    def day_total(self, day: str | None = None, wait: float | None = None, group: str | Every | None = EVERY) -> float:
        """USD spent on `day` (UTC; today by default), by every window: by one provider group's key
        (None: the default key), or by every key. With `wait`, gives up after that many seconds
        behind a lock (ours or another window's) with sqlite3.OperationalError. A row that does not
        read as a record still counts its cost when that reads: the spend guard errs toward asking."""
        query: tuple[str, tuple[str, ...]] = ("SELECT cost FROM usage WHERE day = ?", (day or utc_day(),))
        if group is None:
            query = (f"{query[0]} AND grp IS NULL", query[1])
        elif isinstance(group, str):
            query = (f"{query[0]} AND grp = ?", (*query[1], group))
        if wait is None:
            with self._lock:
                rows = self._db.execute(*query).fetchall()
        else:
            if not self._lock.acquire(timeout=wait):
                raise sqlite3.OperationalError("the usage history is busy (a write is waiting for a lock)")
            try:
                self._db.execute(f"PRAGMA busy_timeout = {round(wait * 1000)}")
                rows = self._db.execute(*query).fetchall()
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                self._lock.release()
        return math.fsum(_cost(row[0]) or 0.0 for row in rows)


def _record(row: tuple[Any, ...]) -> UsageRecord | None:
    values = dict(zip((name for _, name in _FIELDS), row, strict=True))
    try:
        provider, byok, group, requested = values["provider"], values["byok"], values["group"], values["requestedModel"]
        return {
            "id": _text(values["id"], MAX_ID),
            "time": _text(values["time"], MAX_TIME),
            "model": _text(values["model"], MAX_MODEL_ID),
            "provider": None if provider is None or provider == "" else _text(provider, MAX_PROVIDER),
            "inputTokens": _count(values["inputTokens"]),
            "outputTokens": _count(values["outputTokens"]),
            "cachedTokens": _count(values["cachedTokens"]),
            "cacheWriteTokens": _count(values["cacheWriteTokens"]),
            "reasoningTokens": _count(values["reasoningTokens"]),
            "cost": _cost(values["cost"]),
            "billed": values["billed"] == 1,
            "byok": None if byok not in (0, 1) else byok == 1,
            "group": _group(group),
            # a requested model that does not read is no rewrite: the record stands as the model's
            "requestedModel": requested if isinstance(requested, str) and 0 < len(requested) <= MAX_MODEL_ID else None,
            "cacheSaved": bounded_saving(values["cacheSaved"]),
        }
    except ValueError:
        return None


def _text(value: Any, most: int) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= most:
        raise ValueError("not a text within its bound")
    return value


def _group(value: Any) -> str | None:
    """A group tag as messages.GroupId allows; anything else reads as the default key's."""
    if isinstance(value, str) and len(value) <= MAX_GROUP and re.fullmatch(GROUP_PATTERN, value):
        return value
    return None


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        raise ValueError("not a token count")
    return value


def _cost(value: Any) -> float | None:
    """USD as JSON can carry it: finite and within bounds, else unknown."""
    return bounded_usd(value)
