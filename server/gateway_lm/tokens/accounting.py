"""What we learn from the gateway's own numbers, per model, kept across restarts.

- Calibration: other providers tokenize differently from o200k. After each response the estimate
  of the request we sent is compared with the `input_tokens` the gateway reports; the per-model
  factor is smoothed and bounded, and the extension multiplies its exact counts by it.
- Learned limits: when the gateway says a request overflowed the context, the limit it names
  replaces the catalogue's, so Copilot summarises before the next overflow.

Each VS Code window runs its own sidecar on the same `accounting.json` (statefile.py says how it is
read and written); a save writes only the models this sidecar changed over what is on disk. What a
save could not write is written by the next one, or at the latest when the sidecar exits (`close`).
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import re
from pathlib import Path

from .statefile import MAX_FACTOR, MAX_LIMIT, MIN_FACTOR, MIN_LIMIT, Replace, State, read_state, write_state

log = logging.getLogger(__name__)

__all__ = ["MAX_FACTOR", "MIN_FACTOR", "Accounting", "limit_from_message"]

SMOOTHING = 0.5  # weight of the newest observation once a model has a factor
MIN_ESTIMATE = 50  # tiny requests say more about fixed overheads than about the tokenizer
_LIMIT = re.compile(
    r"(?:maximum|max|limit|context(?: length| window)?)[^0-9]{0,40}?(\d[\d,]{2,})"  # "maximum … 128000"
    r"|(\d[\d,]{2,})\s*(?:tokens?)?\s*(?:maximum|limit)",  # "200000 maximum"
    re.IGNORECASE,
)


class Accounting:
    def __init__(self, state_dir: str | None = None, replace: Replace = os.replace) -> None:
        self._path = Path(state_dir) / "accounting.json" if state_dir else None
        self._replace = replace  # the rename of each save (statefile.py)
        self.factors: dict[str, float] = {}
        self.limits: dict[str, int] = {}
        self._changed = State()  # what this sidecar learned since its last save
        if self._path is not None:
            # The sidecar runs it when serving ends, by `exit` or by stdin's end (rpc/serve.py), the
            # CLI's commands at the interpreter's exit; a killed process cannot save anyway.
            atexit.register(self.close)
            state, dropped = read_state(self._path)
            self.factors, self.limits = state.factors, state.limits
            if dropped:
                log.warning(
                    "ignored %d invalid entries of %s (%s); the next save repairs it",
                    len(dropped),
                    self._path,
                    ", ".join(dropped[:5]) + (", …" if len(dropped) > 5 else ""),
                )

    def factor(self, model: str) -> float:
        return self.factors.get(model, 1.0)

    def observe(self, model: str, estimate: int, reported: int) -> float | None:
        """Updates the model's factor from one response; returns the new factor when it changed."""
        if estimate < MIN_ESTIMATE or not 0 < reported < math.inf:
            return None
        ratio = min(MAX_FACTOR, max(MIN_FACTOR, reported / estimate))
        previous = self.factors.get(model)
        factor = ratio if previous is None else previous + SMOOTHING * (ratio - previous)
        factor = round(factor, 4)
        if previous is not None and math.isclose(previous, factor, abs_tol=1e-4):
            return None
        self.factors[model] = self._changed.factors[model] = factor
        self._save()
        log.info("calibration for %s: estimate %d, reported %d, factor %.3f", model, estimate, reported, factor)
        return factor

    def learn_limit(self, model: str, message: str) -> int | None:
        limit = limit_from_message(message)
        if limit is None or self.limits.get(model) == limit:
            return None
        self.limits[model] = self._changed.limits[model] = limit
        self._save()
        log.info("learned the input limit of %s: %d tokens", model, limit)
        return limit

    def close(self) -> None:
        """The last save, at exit or when the state folder changes: what an earlier save could not
        write (another window, an antivirus or the indexer held the file for longer than its
        retries) is tried once more; a failure is the one line `_save` logs, never a traceback."""
        atexit.unregister(self.close)
        if self._changed.factors or self._changed.limits:
            self._save()

    def _save(self) -> None:
        if self._path is None:
            return
        try:
            merged = write_state(self._path, self._changed, self._replace)
        except (OSError, ValueError) as error:  # ValueError: a path the OS cannot take (a NUL in it)
            log.warning("could not save %s: %s", self._path, error)  # the next save tries again
            return
        self._changed = State()
        # What other windows learned is ours too from now on (limits shape our model list).
        self.factors, self.limits = merged.factors, merged.limits


def limit_from_message(message: str) -> int | None:
    """The token limit an overflow message names: "maximum context length is 128000 tokens",
    "prompt is too long: 210000 tokens > 200000 maximum", "…exceeds the limit of 1,048,576"."""
    candidates = []
    for match in _LIMIT.finditer(message):
        digits = (match.group(1) or match.group(2)).replace(",", "")
        if len(digits) <= len(str(MAX_LIMIT)) and MIN_LIMIT <= int(digits) <= MAX_LIMIT:
            candidates.append(int(digits))
    return min(candidates) if candidates else None
