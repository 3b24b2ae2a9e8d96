"""Virtual models: a team's saved gateway configuration (a model with its routing, fallbacks and
provider options) addressed as `vmc/<slug>` (rfcs/0003-rpc-contract.md, "Virtual models").

The gateway's `/models` list may not name them. The user adds one by its id
(`vercelAiGateway.virtualModels`); the sidecar asks the gateway about each one its list lacks
(`GET {base}/models/vmc/<slug>`, the OpenAI-compatible read of one model) and offers it with what
the answer says: its window, prices and tags, read as a catalogue entry is. What the gateway does not
say is named in the tooltip, and the entry counts with the catalogue's defaults meanwhile: a 128K
window, 16K out, tools sent, no prices (with a spend limit set, the user is asked before sending).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ValidationError

from .catalogue import ModelInfo, model_from_gateway

VIRTUAL_PREFIX = "vmc/"
# An id the setting may hold: the prefix and one path segment of letters, digits, `.`, `_` and `-`,
# starting with a letter or digit (so never `..`). It becomes part of a URL path and a request's
# `model`, and VS Code shows it: nothing else gets through. The extension's input box checks the
# same pattern (a contract constant).
VIRTUAL_ID_PATTERN = r"^vmc/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
VIRTUAL_ID = re.compile(VIRTUAL_ID_PATTERN)
MAX_VIRTUAL_MODELS = 20  # a team's handful; each is one read per list
MAX_VIRTUAL_BODY = 64 << 10  # one model's entry; the whole catalogue is a few hundred KiB
VIRTUAL_READ_TIMEOUT = 10.0  # seconds: a read that hangs must not hold the model list

Unstated = Literal["window", "prices", "tools"]


def valid_virtual_models(raw: Any) -> tuple[list[str], list[str]]:
    """The setting's ids that may be used, in order and once each, and what was dropped (and why)."""
    if not isinstance(raw, list):
        return [], ["must be a list of ids like vmc/my-model"]
    kept: list[str] = []
    dropped: list[str] = []
    for value in raw:
        if not isinstance(value, str) or not VIRTUAL_ID.fullmatch(value):
            shown = value[:40] if isinstance(value, str) else type(value).__name__
            dropped.append(f"{shown!r} is not a virtual model id (vmc/ and a slug of letters, digits, '.', '_', '-')")
        elif value not in kept:
            kept.append(value)
    if len(kept) > MAX_VIRTUAL_MODELS:
        dropped.append(f"at most {MAX_VIRTUAL_MODELS} virtual models: {len(kept) - MAX_VIRTUAL_MODELS} left out")
        kept = kept[:MAX_VIRTUAL_MODELS]
    return kept, dropped


def entry_in(answer: Any, model_id: str) -> dict[str, Any] | None:
    """The gateway's entry for `model_id` in its answer: the object itself, or under `data` (an
    object, or a list holding it). Anything else says nothing."""
    if isinstance(answer, dict) and isinstance(answer.get("data"), (dict, list)):
        answer = answer["data"]
    candidates = answer if isinstance(answer, list) else [answer]
    return next((c for c in candidates if isinstance(c, dict) and c.get("id") == model_id), None)


def virtual_model(model_id: str, answer: Any, output_reservation: int) -> ModelInfo:
    """The picker's entry for a virtual model, from the gateway's answer about it (None or anything
    unreadable: it said nothing)."""
    raw = entry_in(answer, model_id) or {}
    said = {**raw, "id": model_id, "type": "language"}
    try:
        model = model_from_gateway(said, output_reservation)
    except (ValidationError, ValueError, TypeError, AttributeError):
        model, raw = model_from_gateway({"id": model_id}, output_reservation), {}
    assert model is not None  # an id that matches VIRTUAL_ID is a catalogue id of type language
    unstated: list[Unstated] = []
    if not isinstance(raw.get("context_window"), (int, float)) or model.contextWindow != raw.get("context_window"):
        unstated.append("window")
    if model.pricing.input is None or model.pricing.output is None:
        unstated.append("prices")
    tools = model.capabilities.toolCalling
    if not isinstance(raw.get("tags"), list):
        unstated.append("tools")
        # Sent tools: a team saves a configuration for its agents, and a model that takes none
        # refuses the request with an error the user reads, where withheld tools fail silently.
        tools = True
    return model.model_copy(
        update={
            "name": model.name if raw.get("name") else model_id,
            "ownedBy": model.ownedBy if raw.get("owned_by") else "vmc",
            "capabilities": model.capabilities.model_copy(update={"toolCalling": tools}),
            "virtual": True,
            "unstated": unstated,
        }
    )
