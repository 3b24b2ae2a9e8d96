"""Reasoning effort per model (rfcs/0007-network-and-options.md, "Reasoning effort per model").

Levels differ per model (gpt-5.2: none…xhigh; gpt-5: minimal…high; o3: low…high), so one global
level can be refused by another model. Here:
- which levels a model accepts and what it does with none sent: the catalogue's `reasoning_options`
  where it says, else a written rule per family (`RULES`);
- the menu Copilot shows beside the model in the chat input (`configurationSchema`), preselecting
  what would be sent if the user chose nothing;
- the level a request carries: the user's choice in that menu over the settings, and never a level
  the model does not accept (the nearest one it does is sent instead).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel

log = logging.getLogger(__name__)

Effort = Literal["default", "none", "minimal", "low", "medium", "high", "xhigh"]
# The levels of OpenResponses' `reasoning.effort`, weakest first; "default" sends no effort.
LEVELS: tuple[Effort, ...] = ("none", "minimal", "low", "medium", "high", "xhigh")
MENU_KEY = "reasoningEffort"  # the key of the chat input's menu, as VS Code's own providers name it
MENU_TITLE = "Thinking Effort"
MENU_DESCRIPTION = "How much the model reasons before it answers: more is slower and bills more output tokens."
MAX_CATALOGUE_VALUES = 32  # a catalogue entry's list of levels; more is not a list of levels
_LABELS: dict[Effort, tuple[str, str]] = {
    "default": ("Provider default", "No effort is sent: the provider's own default applies"),
    "none": ("None", "No reasoning: the fastest and cheapest answers"),
    "minimal": ("Minimal", "The least reasoning, for the fastest answers"),
    "low": ("Low", "Faster answers with less reasoning"),
    "medium": ("Medium", "Balanced reasoning and speed"),
    "high": ("High", "Deeper reasoning: slower, more output tokens billed"),
    "xhigh": ("Extra High", "The deepest reasoning: slowest, the most output tokens billed"),
}


class Efforts(BaseModel):
    """What a reasoning model accepts: `levels` weakest first, and `default`, what it does when no
    effort is sent ("default" where that is not known: the provider decides)."""

    levels: list[Effort]
    default: Effort
    source: Literal["catalogue", "rule"]


class EffortProperty(BaseModel):
    """The chat input's menu for one model: a JSON Schema property as VS Code reads it
    (`enumItemLabels`, `enumDescriptions` and `group: 'navigation'` are VS Code's)."""

    type: Literal["string"]
    title: str
    description: str
    enum: list[Effort]
    enumItemLabels: list[str]
    enumDescriptions: list[str]
    default: Effort
    group: Literal["navigation"]


# ---- which levels a model accepts ----

_OPEN: tuple[Effort, ...] = ("none", "low", "medium", "high", "xhigh")
# First match wins, on the id after `creator/`, lower-cased. From OpenAI's reasoning guide and model
# pages (2026): gpt-5.1 added `none` (its default), gpt-5.2 `xhigh`; gpt-5 has `minimal` and defaults
# to medium; o-series and gpt-oss take low/medium/high. Other providers' models take what the gateway
# translates for every provider (low, medium, high) and get a "Provider default" entry first, since
# what they do with no effort differs (Anthropic's models do not think at all without one).
_RULES: tuple[tuple[str, tuple[Effort, ...], Effort], ...] = (
    (r"^gpt-5-pro\b", ("high",), "high"),
    (r"^gpt-5\.\d+-pro\b", ("medium", "high", "xhigh"), "medium"),
    (r"^gpt-5\.1-codex-max\b", ("low", "medium", "high", "xhigh"), "medium"),
    (r"^gpt-5(\.1)?-codex\b", ("low", "medium", "high"), "medium"),
    (r"^gpt-5\.1\b", ("none", "low", "medium", "high"), "none"),
    (r"^gpt-5\.\d+-codex\b", ("low", "medium", "high", "xhigh"), "medium"),
    (r"^gpt-5\.\d+", _OPEN, "none"),
    (r"^gpt-5\b", ("minimal", "low", "medium", "high"), "medium"),
    (r"^o\d", ("low", "medium", "high"), "medium"),
    (r"^gpt-oss\b", ("low", "medium", "high"), "medium"),
)
RULES = tuple((re.compile(pattern), levels, default) for pattern, levels, default in _RULES)
_ANY_PROVIDER: tuple[Effort, ...] = ("default", "low", "medium", "high")


def efforts_for(raw: Mapping[str, Any], model_id: str, reasoning: bool) -> Efforts | None:
    """The levels of a catalogue entry; None for a model that does not reason."""
    if not reasoning:
        return None
    rule = by_rule(model_id)
    levels, default = _from_catalogue(raw.get("reasoning_options"))
    if not levels:
        return rule
    if default not in levels:
        default = rule.default if rule.default in levels else "default"
    if default == "default":
        levels = ["default", *levels]
    return Efforts(levels=levels, default=default, source="catalogue")


def by_rule(model_id: str) -> Efforts:
    short = model_id.partition("/")[2].lower() or model_id.lower()
    for pattern, levels, default in RULES:
        if pattern.search(short):
            return Efforts(levels=list(levels), default=default, source="rule")
    return Efforts(levels=list(_ANY_PROVIDER), default="default", source="rule")


def _from_catalogue(raw: Any) -> tuple[list[Effort], Effort | None]:
    """`reasoning_options` in the shapes catalogues use: a list of levels; an object with its list
    under `efforts`/`levels`/`values`/`supported` (and a `default`); or a list of such objects of type
    `effort` (models.dev's). Anything else, or no level we know, reads as nothing said."""
    values: Any = None
    default: Any = None
    if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        values = raw
    elif isinstance(raw, dict):
        values, default = _listed(raw)
    elif isinstance(raw, list):
        for option in raw[:MAX_CATALOGUE_VALUES]:
            if isinstance(option, dict) and str(option.get("type", "")).replace("_", "").lower() in (
                "effort",
                "reasoningeffort",
            ):
                values, default = _listed(option)
                break
    if not isinstance(values, list) or len(values) > MAX_CATALOGUE_VALUES:
        return [], None
    named = {v.lower() for v in values if isinstance(v, str)}
    return [lv for lv in LEVELS if lv in named], level(default)


def _listed(option: Mapping[str, Any]) -> tuple[Any, Any]:
    for key in ("efforts", "effort", "levels", "values", "supported", "reasoning_effort"):
        if isinstance(option.get(key), list):
            return option[key], option.get("default", option.get("default_effort"))
    return None, None


def level(value: Any) -> Effort | None:
    """An untrusted value as a level, or None."""
    if isinstance(value, str) and value.lower() in get_args(Effort):
        return value.lower()  # type: ignore[return-value]  # checked against Effort's values
    return None


# ---- what is sent ----


def nearest(level: Effort, efforts: Efforts) -> Effort:
    """`level` if the model accepts it, else the nearest level it accepts (on a tie the higher: a
    user who asked for some reasoning keeps some)."""
    if level in efforts.levels or level == "default":
        return level
    accepted = [lv for lv in efforts.levels if lv != "default"]
    if not accepted:
        return "default"
    at = LEVELS.index(level)
    return min(accepted, key=lambda lv: (abs(LEVELS.index(lv) - at), -LEVELS.index(lv)))


def preselected(efforts: Efforts, setting: Effort | None) -> Effort:
    """What the menu shows before the user chooses: what would be sent, the settings' level (as the
    model takes it) or the model's own default."""
    if setting is None or setting == "default":
        return efforts.default
    return nearest(setting, efforts)


def menu(efforts: Efforts | None, setting: Effort | None) -> EffortProperty | None:
    """The chat input's effort menu, for a model with more than one level to choose from."""
    if efforts is None or len(efforts.levels) < 2:
        return None
    return EffortProperty(
        type="string",
        title=MENU_TITLE,
        description=MENU_DESCRIPTION,
        enum=list(efforts.levels),
        enumItemLabels=[_LABELS[lv][0] for lv in efforts.levels],
        enumDescriptions=[_LABELS[lv][1] for lv in efforts.levels],
        default=preselected(efforts, setting),
        group="navigation",
    )


class Decision(BaseModel):
    """The effort a request carries (None: none is sent) and, when a level was replaced, why."""

    level: Effort | None
    note: str = ""


def decide(
    model_id: str,
    efforts: Efforts | None,
    known: bool,
    setting: Effort | None,
    chosen: Any,
    caller: Effort | None,
) -> Decision:
    """`efforts`: the model's (None for a model the catalogue says does not reason; `known` False: not
    in the catalogue, its family's rule applies). `chosen`: the menu's value from the request's
    `modelConfiguration`, untrusted. A caller's explicit option (another extension's `modelOptions`)
    is the most specific; then the user's choice in the menu; then the settings."""
    if known and efforts is None:
        if (caller or level(chosen) or setting) not in (None, "default"):  # every request: debug only
            log.debug("%s does not reason: no reasoning effort sent", model_id)
        return Decision(level=None)
    efforts = efforts or by_rule(model_id)
    menu_level = level(chosen)
    if chosen is not None and menu_level is None:
        log.debug("the chat input's effort for %s is no level: ignored", model_id)
    if caller is not None:
        wanted: Effort | None = caller
    elif menu_level is not None and menu_level != preselected(efforts, setting):
        wanted = menu_level  # the user chose it; the menu's untouched value is the settings' own
    else:
        wanted = setting
    if wanted is None or wanted == "default":
        return Decision(level=None)
    sent = nearest(wanted, efforts)
    if sent == "default":
        return Decision(level=None, note=f"{model_id} takes no reasoning effort: '{wanted}' not sent")
    note = "" if sent == wanted else f"{model_id} does not accept reasoning effort '{wanted}': '{sent}' sent instead"
    return Decision(level=sent, note=note)
