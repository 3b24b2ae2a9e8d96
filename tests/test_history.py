"""The usage history (spend/history.py) on a real SQLite file: two windows writing at once lose
nothing, retention prunes by UTC day, a damaged row is skipped rather than served, and a network
drive or a SQLite that refuses WAL gets a rollback journal."""

from __future__ import annotations

import datetime
import multiprocessing
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway_lm.spend.history import DB_NAME, DRIVE_REMOTE, UsageStore, on_network_drive, set_journal, utc_day

PER_WRITER = 300


def record(key: str, time: str, cost: float | None = 0.001, billed: bool = True, group: str | None = None) -> Any:
    return {
        "id": key,
        "time": time,
        "model": "fake/text",
        "provider": "fakecloud",
        "inputTokens": 10,
        "outputTokens": 2,
        "cachedTokens": 0,
        "cacheWriteTokens": 0,
        "reasoningTokens": 0,
        "cost": cost,
        "billed": billed,
        "byok": False,
        "group": group,
        "requestedModel": None,
        "cacheSaved": 0.0005,
    }


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_many(path: str, writer: str, start: Any) -> None:
    """One window's sidecar: its own connection, an estimate then its billed record per chat."""
    store = UsageStore(Path(path), 90)
    start.wait()
    for n in range(PER_WRITER):
        key = f"{writer}-{n}"
        store.put(key, record(key, now(), billed=False))
        store.put(key, record(key, now()))
    store.close()


def test_two_windows_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / DB_NAME)
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    writers = [context.Process(target=write_many, args=(path, name, start)) for name in ("a", "b")]
    for writer in writers:
        writer.start()
    start.set()
    reader = UsageStore(Path(path), 90)
    seen = 0
    while any(writer.is_alive() for writer in writers):
        seen = max(seen, len(reader.records()))  # reading while both write never fails
    for writer in writers:
        writer.join(30)
        assert writer.exitcode == 0
    records = reader.records(limit=10_000)
    assert len(records) == 2 * PER_WRITER and all(r["billed"] for r in records)
    assert reader.day_total() == 2 * PER_WRITER * 0.001
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reader.close()


def test_retention_prunes_by_day_and_a_reader_keeps_all(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    keeper = UsageStore(path, None)
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=40)
    keeper.put("old", record("old", old.isoformat().replace("+00:00", "Z")))
    keeper.put("new", record("new", now()))
    keeper.close()
    assert len(UsageStore(path, None).records()) == 2, "a reader (the CLI) prunes nothing"
    store = UsageStore(path, 30)
    assert [r["id"] for r in store.records()] == ["new"]
    store.retain(60)  # a longer retention keeps what is left; a shorter one prunes at the next write
    store.retain(0)
    store.put("today", record("today", now()))
    assert sorted(r["id"] for r in store.records()) == ["new", "today"]


def test_a_damaged_row_is_skipped_and_numbers_stay_finite(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    store = UsageStore(path, 90)
    store.put("good", record("good", now()))
    day = utc_day()
    raw = sqlite3.connect(path)
    columns = "key, id, time, day, model, input_tokens, output_tokens, cached_tokens, cache_write_tokens, "
    columns += "reasoning_tokens, cost, billed"
    rows = [
        ("neg", "neg", now(), day, "m", -1, 0, 0, 0, 0, 0.1, 1),  # a count below zero
        ("txt", "txt", now(), day, "m", "ten", 0, 0, 0, 0, 0.1, 1),  # a count that is text
        ("inf", "inf", now(), day, "m", 1, 1, 0, 0, 0, float("inf"), 1),  # a cost JSON cannot carry
    ]
    raw.executemany(f"INSERT INTO usage ({columns}) VALUES ({', '.join('?' * 12)})", rows)
    raw.commit()
    raw.close()
    records = store.records()
    assert sorted(r["id"] for r in records) == ["good", "inf"]
    assert next(r for r in records if r["id"] == "inf")["cost"] is None
    assert store.day_total() == 0.001 + 0.1 + 0.1, "the unreadable rows' costs still count; the infinite one not"
    assert next(r for r in records if r["id"] == "inf")["cacheSaved"] is None, "no saving kept: unknown"
    assert next(r for r in records if r["id"] == "good")["cacheSaved"] == 0.0005


def test_a_history_from_before_the_cache_saving_gets_its_column(tmp_path: Path) -> None:
    """A history an older version wrote has no `cache_saved` column: added on open, its rows unknown."""
    path = tmp_path / DB_NAME
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE usage (key TEXT PRIMARY KEY, id TEXT NOT NULL, time TEXT NOT NULL, day TEXT NOT NULL,"
        " model TEXT NOT NULL, provider TEXT, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,"
        " cached_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL,"
        " cost REAL, billed INTEGER NOT NULL, byok INTEGER, grp TEXT)"
    )
    old.execute(
        "INSERT INTO usage VALUES ('k', 'old', ?, ?, 'fake/text', NULL, 10, 2, 5, 0, 0, 0.002, 1, 0, NULL)",
        (now(), utc_day()),
    )
    old.commit()
    old.close()
    store = UsageStore(path, 90)
    store.put("new", record("new", now()))
    saved = {r["id"]: r["cacheSaved"] for r in store.records()}
    assert saved == {"old": None, "new": 0.0005}


def test_an_unusable_place_raises_for_the_ledger_to_report(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError):
        UsageStore.open(str(blocker / "sub"), 90)
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / DB_NAME).write_bytes(b"this is not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        UsageStore.open(str(garbage), 90)
    assert UsageStore.open(None, 90) is None


DRIVE_FIXED = 3  # GetDriveTypeW: "The drive has fixed media"


@pytest.mark.parametrize(
    ("path", "platform", "network"),
    [
        (r"\\fileserver\users$\ana\AppData\Roaming\Code\User\globalStorage\x", "win32", True),  # redirected
        (r"\\?\UNC\fileserver\users$\ana\AppData\Roaming\Code", "win32", True),
        ("//fileserver/users$/ana/AppData/Roaming/Code", "win32", True),
        (r"H:\AppData\Roaming\Code\User\globalStorage\x", "win32", True),  # a mapped drive
        (r"C:\Users\ana\AppData\Roaming\Code\User\globalStorage\x", "win32", False),
        (r"\\?\C:\Users\ana\AppData\Roaming\Code", "win32", False),
        (r"\\?\H:\AppData\Roaming\Code", "win32", True),
        ("/home/ana/.config/Code/User/globalStorage/x", "linux", False),
        ("//fileserver/users/ana", "darwin", False),  # not a Windows name there
    ],
)
def test_a_network_drive_is_told_apart_as_windows_names_it(path: str, platform: str, network: bool) -> None:
    asked: list[str] = []

    def get_drive_type(root: str) -> int:  # GetDriveTypeW, with H: mapped to a share
        asked.append(root)
        return DRIVE_REMOTE if root.upper() == "H:\\" else DRIVE_FIXED

    assert on_network_drive(path, platform, get_drive_type) is network
    drive_letter = platform == "win32" and path.replace("\\\\?\\", "")[1:2] == ":"
    assert asked == ([path.replace("\\\\?\\", "")[:2].upper() + "\\"] if drive_letter else []), "UNC needs no call"


def journal_mode(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        db.close()


def test_a_history_on_a_network_drive_keeps_a_rollback_journal(tmp_path: Path) -> None:
    """https://sqlite.org/wal.html: WAL needs every process on one host; a redirected %APPDATA% is not."""
    path = tmp_path / DB_NAME
    on_share = {"on_network": lambda _: True}
    local = UsageStore(path, 90)  # a start before the folder moved left it in WAL, and has it open
    assert local.wal and journal_mode(path) == "wal"
    held = UsageStore(path, 90, **on_share)  # leaving WAL needs the file alone: it stays, and works
    held.put("a", record("a", now()))
    assert held.wal and [r["id"] for r in local.records()] == ["a"]
    local.close()
    held.close()
    store = UsageStore(path, 90, **on_share)
    assert not store.wal and journal_mode(path) == "delete"
    assert not (tmp_path / f"{DB_NAME}-wal").exists(), "no WAL file beside it"
    other = UsageStore(path, 90, **on_share)  # a second window on the same share
    store.put("b", record("b", now()))
    other.put("c", record("c", now()))
    assert sorted(r["id"] for r in store.records()) == ["a", "b", "c"] and other.day_total() == 0.003
    store.close()
    other.close()


@pytest.mark.skipif(sys.platform == "win32", reason="SQLite's unix VFSs")
def test_a_sqlite_that_refuses_wal_gets_a_rollback_journal(tmp_path: Path) -> None:
    """A VFS without shared memory (SQLite's unix-dotfile) answers `PRAGMA journal_mode = WAL` with
    the mode it kept; synchronous then stays FULL (NORMAL is only crash-safe in WAL)."""
    local = sqlite3.connect(tmp_path / "local.sqlite3", isolation_level=None)
    assert set_journal(local, network=False)
    assert local.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    refusing = sqlite3.connect(f"file:{tmp_path / 'dotfile.sqlite3'}?vfs=unix-dotfile", uri=True, isolation_level=None)
    assert not set_journal(refusing, network=False)
    assert refusing.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert refusing.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    local.close()
    refusing.close()
