"""What we learn from the gateway's own numbers, per model, kept across restarts.

- Calibration: other providers tokenize differently from o200k. After each response the estimate
  of the request we sent is compared with the `input_tokens` the gateway reports; the per-model
  factor is smoothed and bounded, and the extension multiplies its exact counts by it.
- Learned limits: when the gateway says a request overflowed the context, the limit it names
  replaces the catalogue's, so Copilot summarises before the next overflow.
"""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("gateway_lm.accounting")

MIN_FACTOR, MAX_FACTOR = 0.5, 3.0
SMOOTHING = 0.5  # weight of the newest observation once a model has a factor
MIN_ESTIMATE = 50  # tiny requests say more about fixed overheads than about the tokenizer
_LIMIT = re.compile(
    r"(?:maximum|max|limit|context(?: length| window)?)[^0-9]{0,40}?(\d[\d,]{2,})"  # "maximum … 128000"
    r"|(\d[\d,]{2,})\s*(?:tokens?)?\s*(?:maximum|limit)",  # "200000 maximum"
    re.IGNORECASE,
)


class Accounting:
    def __init__(self, state_dir: str | None = None) -> None:
        self._path = Path(state_dir) / "accounting.json" if state_dir else None
        self.factors: dict[str, float] = {}
        self.limits: dict[str, int] = {}
        self._load()

    def factor(self, model: str) -> float:
        return self.factors.get(model, 1.0)

    def observe(self, model: str, estimate: int, reported: int) -> float | None:
        """Updates the model's factor from one response; returns the new factor when it changed."""
        if estimate < MIN_ESTIMATE or reported <= 0:
            return None
        ratio = min(MAX_FACTOR, max(MIN_FACTOR, reported / estimate))
        previous = self.factors.get(model)
        factor = ratio if previous is None else previous + SMOOTHING * (ratio - previous)
        factor = round(factor, 4)
        if previous is not None and math.isclose(previous, factor, abs_tol=1e-4):
            return None
        self.factors[model] = factor
        self._save()
        log.info("calibration for %s: estimate %d, reported %d, factor %.3f", model, estimate, reported, factor)
        return factor

    def learn_limit(self, model: str, message: str) -> int | None:
        limit = limit_from_message(message)
        if limit is None or self.limits.get(model) == limit:
            return None
        self.limits[model] = limit
        self._save()
        log.info("learned the input limit of %s: %d tokens", model, limit)
        return limit

    def _load(self) -> None:
        if self._path is None or not self._path.exists():
            return
        try:
            data: Any = json.loads(self._path.read_text(encoding="utf-8"))
            self.factors = {str(k): float(v) for k, v in data.get("factors", {}).items()}
            self.limits = {str(k): int(v) for k, v in data.get("limits", {}).items()}
        except (OSError, ValueError, AttributeError, TypeError):
            log.warning("ignored an unreadable %s", self._path)

    def _save(self) -> None:
        if self._path is None:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self._path.with_suffix(".tmp")
            temporary.write_text(json.dumps({"factors": self.factors, "limits": self.limits}), encoding="utf-8")
            temporary.replace(self._path)
        except OSError as error:
            log.warning("could not save %s: %s", self._path, error)


def limit_from_message(message: str) -> int | None:
    """The token limit an overflow message names: "maximum context length is 128000 tokens",
    "prompt is too long: 210000 tokens > 200000 maximum", "…exceeds the limit of 1,048,576"."""
    candidates = []
    for match in _LIMIT.finditer(message):
        number = int((match.group(1) or match.group(2)).replace(",", ""))
        if number >= 1000:
            candidates.append(number)
    return min(candidates) if candidates else None
