"""`accounting.json`: read as untrusted input, written atomically and merged with what is on disk.

Every VS Code window runs its own sidecar on the same storage folder. A save takes an exclusive
lock on `accounting.json.lock` (`fcntl.flock`; on Windows `msvcrt.locking`, the same function),
re-reads the file, lays this sidecar's changes over it, writes a unique temporary file in the same
folder and renames it over the old one. A reader sees the old file or the new one, never part of
one, and no window's entries are lost. On Windows the rename fails while another process has the
file open (another window's sidecar reading it, an antivirus, the search indexer): it is retried.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..offer.catalogue import MAX_TOKENS

log = logging.getLogger(__name__)

MIN_FACTOR, MAX_FACTOR = 0.5, 3.0
MIN_LIMIT, MAX_LIMIT = 1_000, MAX_TOKENS
MAX_FILE_BYTES = 16 << 20  # thousands of models take a few hundred KB
LOCK_WAIT = 2.0  # seconds; a save never waits longer for another window (saves take milliseconds)
# A rename refused while the file is held open is tried this often, REPLACE_BACKOFF × the attempt's
# number apart (0.2 s in all): the policy of `renameRetrying` in extension/storage.ts, which renames
# the extension's files in the same folder over the same holders.
REPLACE_ATTEMPTS = 5
REPLACE_BACKOFF = 0.02  # seconds
Replace = Callable[[str, Path], None]  # os.replace's shape; tests pass one that fails as Windows does
_T = TypeVar("_T", int, float)


@dataclass
class State:
    factors: dict[str, float] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)


def read_state(path: Path) -> tuple[State, list[str]]:
    """The valid entries of the file, and a name for each part of it that was dropped."""
    try:
        data: Any = json.loads(read_bounded(path, MAX_FILE_BYTES))
    except FileNotFoundError:
        return State(), []
    except _Refused as refused:
        return State(), [f"the whole file ({refused})"]
    except (OSError, ValueError, RecursionError) as error:
        return State(), [f"the whole file ({type(error).__name__})"]
    if not isinstance(data, dict):
        return State(), [f"the whole file (a JSON {type(data).__name__}, not an object)"]
    dropped: list[str] = []
    factors = _section(data, "factors", _factor, dropped)
    limits = _section(data, "limits", _limit, dropped)
    return State(factors, limits), dropped


class _Refused(OSError):
    """A file that is not one of ours: not a regular file, or larger than any we write."""


def read_bounded(path: Path, max_bytes: int) -> bytes:
    """The bytes of `path`, bounded by bytes read, never by the size stat reports.

    Someone else may have left anything there: a link to /dev/zero (endless), a FIFO (an open that
    waits for a writer for good). Opened without blocking, the open handle must be a regular file,
    and one byte past `max_bytes` refuses it. Raises FileNotFoundError, `_Refused` or OSError.
    """
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(descriptor, "rb", buffering=0) as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise _Refused("not a regular file")
        data = file.read(max_bytes + 1)  # a raw file's read may return less: read until the end
        chunks = [data] if data else []
        total = len(data or b"")
        while data and total <= max_bytes:
            data = file.read(max_bytes + 1 - total)
            if data:
                chunks.append(data)
                total += len(data)
        if total > max_bytes:
            raise _Refused(f"larger than {max_bytes} bytes")
        return b"".join(chunks)


def write_state(path: Path, changes: State, replace: Replace = os.replace) -> State:
    """Lays `changes` over what is on disk now and writes the result; returns it. Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        merged, _ = read_state(path)  # what is invalid there is dropped: the write repairs the file
        merged.factors.update(changes.factors)
        merged.limits.update(changes.limits)
        text = json.dumps({"factors": merged.factors, "limits": merged.limits}, allow_nan=False)
        _replace(path, text, replace)
    return merged


def _section(data: dict[str, Any], name: str, check: Callable[[Any], _T | None], dropped: list[str]) -> dict[str, _T]:
    raw = data.get(name, {})
    if not isinstance(raw, dict):
        dropped.append(name)
        return {}
    kept: dict[str, _T] = {}
    for model, value in raw.items():
        valid = check(value)
        if valid is None:
            dropped.append(f"{name}.{model[:80]}")
        else:
            kept[model] = valid
    return kept


def _factor(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if MIN_FACTOR <= value <= MAX_FACTOR else None  # False for NaN


def _limit(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if MIN_LIMIT <= value <= MAX_LIMIT else None


def _replace(path: Path, text: str, replace: Replace) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        _replace_retrying(temporary, path, replace)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _replace_retrying(temporary: str, path: Path, replace: Replace) -> None:
    for attempt in range(1, REPLACE_ATTEMPTS + 1):
        try:
            replace(temporary, path)
            return
        except OSError as error:
            if attempt == REPLACE_ATTEMPTS or not _held_open(error):
                raise
        time.sleep(REPLACE_BACKOFF * attempt)  # the holders (a read, a scan) take milliseconds


def _held_open(error: OSError) -> bool:
    """Whether the rename failed because another process has the file open. Windows refuses to
    replace a file opened without delete sharing (MoveFileExW: ERROR_ACCESS_DENIED 5 or
    ERROR_SHARING_VIOLATION 32, ERROR_LOCK_VIOLATION 33 for a byte-range lock), and CPython maps all
    three to EACCES, a PermissionError (PC/errmap.h). The same codes as storage.ts retries (libuv's
    names: EPERM, EACCES, EBUSY), on every platform: elsewhere they are rare and cost 0.2 s."""
    return isinstance(error, PermissionError) or error.errno == errno.EBUSY


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    descriptor = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        held = _acquire(descriptor)
        try:
            yield
        finally:
            if held:
                _unlock(descriptor)
    finally:
        os.close(descriptor)  # releases the lock too, should unlocking have failed


def _acquire(descriptor: int) -> bool:
    # Polled rather than blocking: a hung window holding the lock must not hang this sidecar.
    deadline = time.monotonic() + LOCK_WAIT
    while not _try_lock(descriptor):
        if time.monotonic() > deadline:
            log.warning("another window holds the lock on the accounting file; saving without it")
            return False
        time.sleep(0.005)
    return True


# The lock: the whole lock file's first byte, exclusive, never waited on by the OS; the OS drops it
# when its holder exits, so a crashed window leaves no stale lock.
if sys.platform == "win32":
    import msvcrt

    def _try_lock(descriptor: int) -> bool:
        os.lseek(descriptor, 0, os.SEEK_SET)  # msvcrt locks from the current position
        try:
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
        except OSError:  # held by another process (EACCES, EDEADLOCK)
            return False
        return True

    def _unlock(descriptor: int) -> None:
        os.lseek(descriptor, 0, os.SEEK_SET)
        msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(descriptor: int) -> bool:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
