"""The context size the user pays for, chosen in the chat input (rfcs/0006-spend.md, "Context tiers").

Where the gateway bills a long input at higher rates (its tiered prices: every token of a request
past 200K input tokens at twice the rate, say), the chat input offers the tiers as a `contextSize`
menu, the cheapest first and preselected. VS Code shows the menu beside the model; Copilot budgets
and compacts the conversation at the chosen size and its context meter shows it (VS Code 1.133+).
The values are budgets in the unit of `maxInputTokens` (o200k tokens, rfcs/0004 "One budget
unit"), since Copilot compares them with it. This module is the menu's shape and what a choice
means for the request; picker.py builds the menu from the catalogue's tiers, and the chat service
fits a request into the size chosen (fit.py), so that one Copilot did not compact in time is not
billed at the longer context's rates.
"""

from __future__ import annotations

import logging
import math
from typing import Literal

from pydantic import BaseModel

log = logging.getLogger(__name__)

# The fewest input tokens an option may stand for. Copilot's agent prompt needs more before the
# conversation starts (its 40 tool definitions alone are ~12K o200k tokens, rfcs/0004 "Summarisation
# turns", and its instructions come on top), so a tier that starts below this (at token 1,
# 2 or 1,000) bills every real request: "Up to 1 input tokens", preselected, is no choice, and every
# request would be trimmed to it. Such a tier still prices requests; it is no option
# (picker.context_options), and the catalogue names its models in one log line per list.
MIN_OPTION_TOKENS = 16_384
MENU_KEY = "contextSize"  # the key VS Code and Copilot read (`modelConfiguration.contextSize`)
MENU_TITLE = "Context Size"
MENU_DESCRIPTION = (
    "How much context Copilot keeps before it compacts: a longer context bills every token"
    " of a long request at a higher rate."
)


class ContextOption(BaseModel):
    """One entry of the menu: the budget Copilot keeps to, and what the user reads of it."""

    value: int
    label: str
    description: str
    inputTokens: int  # the model's own input tokens it stands for: the tier's start − 1, or the window


class ContextSizeProperty(BaseModel):
    """The chat input's context-size menu: a JSON Schema property as VS Code reads it (`group:
    'tokens'` puts it beside the context meter, where VS Code's own providers put theirs)."""

    type: Literal["number"]
    title: str
    description: str
    enum: list[int]
    enumItemLabels: list[str]
    enumDescriptions: list[str]
    default: int
    group: Literal["tokens"]


def context_menu(options: list[ContextOption]) -> ContextSizeProperty | None:
    """The menu for `options` (cheapest first), preselecting the cheapest; None for fewer than two."""
    if len(options) < 2:
        return None
    return ContextSizeProperty(
        type="number",
        title=MENU_TITLE,
        description=MENU_DESCRIPTION,
        enum=[o.value for o in options],
        enumItemLabels=[o.label for o in options],
        enumDescriptions=[o.description for o in options],
        default=options[0].value,
        group="tokens",
    )


def chosen_tokens(options: list[ContextOption], value: object) -> int | None:
    """The input tokens the size chosen in the chat input (`modelConfiguration.contextSize`, untrusted)
    stands for: the option nearest `value`, since a stored choice outlives a change of the budget
    factor, which moves the values by a few per cent. None without a menu, or for a value that is no
    positive number (logged): the caller keeps the whole window, as Copilot then does."""
    if len(options) < 2 or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        log.info("the context size %.40r is not a number of tokens: the whole window applies", value)
        return None
    # The difference of the logs, not the log of the ratio: a ratio of the tiniest float (5e-324) to
    # a value underflows to 0, whose log is a math domain error.
    return min(options, key=lambda o: abs(math.log(value) - math.log(o.value))).inputTokens
