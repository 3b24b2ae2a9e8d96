"""The context size the user pays for, chosen in the chat input (rfcs/0006-spend.md, "Context tiers").

Where the gateway bills a long input at higher rates (its tiered prices: every token of a request
past 200K input tokens at twice the rate, say), the chat input offers the tiers as a `contextSize`
menu, the cheapest first and preselected. VS Code shows the menu beside the model; Copilot budgets
and compacts the conversation at the chosen size and its context meter shows it (VS Code 1.133+).
The values are budgets in the unit of `maxInputTokens` (o200k tokens, rfcs/0004 "One budget
unit"), since Copilot compares them with it. This module is the menu's shape; picker.py builds it
from the catalogue's tiers.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

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
