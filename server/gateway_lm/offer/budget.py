"""One unit for everything Copilot budgets with: o200k tokens (rfcs/0004-token-accounting.md, "One budget unit").

Copilot measures the prompt's messages with its own o200k tokenizer; only tool tokens come from our
counts, and its background compaction reads the `usage` we report. So the window we advertise, our
counts and the usage we report are all in o200k tokens: the window is the real input limit divided
by the model's calibration factor (real tokens per o200k token), counts are exact o200k counts, and
usage is the real usage divided by the same factor. Both of Copilot's triggers then fire at the real
fraction of the limit they fire at for a model that tokenizes like o200k. Each model entry carries the
factor its window was computed with (`budgetFactor`), and the extension divides the usage it reports
by that very factor, so window and usage never disagree.

The factor that shaped a window is kept until the learned factor moves that window by more than
WINDOW_STEP: every move re-renders the editor's model picker.
"""

from __future__ import annotations

import math

WINDOW_STEP = 0.02  # a factor that moves a window by less is not worth re-rendering the picker


def advertised_window(input_limit: int, factor: float) -> int:
    """The real input limit in o200k tokens: what Copilot budgets its o200k counts against."""
    if not 0 < factor < math.inf:
        return max(1, input_limit)
    return max(1, math.floor(input_limit / factor))


class BudgetFactors:
    """Per model, the factor the advertised window was last computed with."""

    def __init__(self) -> None:
        self._used: dict[str, float] = {}

    def factor(self, model: str, learned: float) -> float:
        """The factor to advertise `model` with: the one used before, unless `learned` moved away from it."""
        if self.moves(model, learned):
            self._used[model] = learned
        return self._used.get(model, learned)

    def moves(self, model: str, learned: float) -> bool:
        """Whether `learned` would move the model's window by more than WINDOW_STEP (or it has none yet)."""
        used = self._used.get(model)
        return used is None or abs(used / learned - 1) > WINDOW_STEP
