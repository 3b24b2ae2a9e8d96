"""The RPC contract between the extension and the sidecar, in one place (rfcs/0003-rpc-contract.md).

Each shape is a pydantic model or a TypedDict where the code that reads or builds it lives
(messages.py, rpc/params.py, catalogue.py, picker.py, errors.py, spend/ledger.py, spend/history.py,
spend/lookups.py); this module names them per method, adds the few that were plain dicts, and prints them as one JSON
Schema: `python -m gateway_lm.contract`.
scripts/gen-contract.mjs turns that into extension/contract.ts (`make contract`; `make lint` checks
that the committed file is up to date), so the extension's types of the seam are never written by hand.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import core_schema
from typing_extensions import TypeAliasType, TypedDict

from .gateway.errors import ErrorData
from .messages import GROUP_PATTERN, MAX_GROUP, MAX_MODEL_ID, FinishReason, PartOut, UsagePart
from .offer.catalogue import SAFE_ID_PATTERN
from .offer.picker import ModelEntry
from .offer.speed import UNPRICED_TIERS
from .offer.virtual import MAX_VIRTUAL_MODELS, VIRTUAL_ID_PATTERN
from .request.options import SECRET_WORDS
from .rpc.params import ChatParams, ConfigureParams, CountParams, KeyParams, UsageParams
from .settings import SETTING_IDS, Settings
from .spend.ledger import BilledNotification, UsageResult
from .spend.lookups import Credits
from .stream.usage import MAX_ID, MAX_PROVIDER, MAX_TIME, MAX_TOKEN_COUNT, MAX_USD

# ---- shapes that were plain dicts ----


class ModelsResult(TypedDict):
    models: list[ModelEntry]


class ChatResult(TypedDict):
    usage: UsagePart | None
    finishReason: FinishReason | None
    responseId: str | None
    # The real input limit the request was fitted to (a limit learned in it included); None for a
    # model not listed. With the window VS Code budgets the turn with, the unit of the usage part
    # (rfcs/0004, "The rest of the turn").
    inputLimit: int | None
    # The factor of the model's window as listed once the turn is over (budget.py); None: not listed.
    budgetFactor: float | None


class CountResult(TypedDict):
    counts: list[int]  # one per text, in order


class ConfigureResult(TypedDict):
    ok: Literal[True]


StreamPart = TypeAliasType("StreamPart", PartOut)


class PartsNotification(TypedDict):
    requestId: str | int
    parts: list[StreamPart]


class Calibration(TypedDict):
    """A model's learned factor moved the window Copilot budgets with (rfcs/0004-token-accounting.md):
    the model list has changed, and the extension fetches it again."""

    model: str
    factor: float


class MetricsNotification(TypedDict):
    """The models' metrics (offer/metrics.py) came, changed or went (rfcs/0003, "Model metrics"):
    the model list carries them, and the extension fetches it again."""

    models: int  # how many models have metrics now


# ---- the contract ----

# Params are what the sidecar reads: a field with a default may be left out. Results and
# notifications are what it writes: every field is there.
METHODS: dict[str, tuple[Any, Any]] = {
    "gateway/models": (KeyParams, ModelsResult),
    "gateway/chat": (ChatParams, ChatResult),
    "gateway/countTokens": (CountParams, CountResult),
    "gateway/configure": (ConfigureParams, ConfigureResult),
    "gateway/credits": (KeyParams, Credits),
    "gateway/usage": (UsageParams, UsageResult),
}
NOTIFICATIONS: dict[str, Any] = {
    "gateway/parts": PartsNotification,  # server → client, per chat request
    "gateway/calibration": Calibration,  # server → client
    "gateway/metrics": MetricsNotification,  # server → client
    "gateway/billed": BilledNotification,  # server → client, once per chat after its result
}
# Constants the extension applies as the sidecar does, under the names they have at their homes
# (usage.py, messages.py, options.py, settings.py, catalogue.py): the bounds of a usage record and of
# a model id, what a model id or version may hold, the words that mark a secret's name in a model's
# extraBody, and each setting's VS Code id. In the schema as `x-constants`; generated into
# extension/contract.ts as `export const`s.
CONSTANTS: dict[str, Any] = {
    "GROUP_PATTERN": GROUP_PATTERN,
    "MAX_GROUP": MAX_GROUP,
    "MAX_ID": MAX_ID,
    "MAX_MODEL_ID": MAX_MODEL_ID,
    "MAX_PROVIDER": MAX_PROVIDER,
    "MAX_TIME": MAX_TIME,
    "MAX_TOKEN_COUNT": MAX_TOKEN_COUNT,
    "MAX_USD": MAX_USD,
    "MAX_VIRTUAL_MODELS": MAX_VIRTUAL_MODELS,
    "SAFE_ID_PATTERN": SAFE_ID_PATTERN,
    "SECRET_WORDS": list(SECRET_WORDS),
    "SETTING_IDS": SETTING_IDS,
    "UNPRICED_TIERS": sorted(UNPRICED_TIERS),  # extension/shared/money.ts prices none of them
    "VIRTUAL_ID_PATTERN": VIRTUAL_ID_PATTERN,
}
# Also in the contract: `data` of every JSON-RPC error, and `initialize`'s options, which carry what
# `gateway/configure` carries.
EXTRAS: dict[str, tuple[Any, JsonSchemaMode]] = {
    "errorData": (ErrorData, "serialization"),
    "initializationOptions": (ConfigureParams, "validation"),
}


class _ContractSchema(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False  # a title names a type in the generated TypeScript: only models and aliases get one

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        # model_dump() writes every field, defaults included, but those it leaves out (exclude_if).
        if self.mode == "serialization" and field["type"] == "model-field":
            return not field.get("serialization_exclude") and not field.get("serialization_exclude_if")
        return super().field_is_required(field, total)


def _closed(properties: dict[str, JsonSchemaValue]) -> JsonSchemaValue:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def schema() -> JsonSchemaValue:
    """One JSON Schema: the root `RpcContract` names every method, notification and extra; the
    shapes are its `$defs`."""
    inputs: list[tuple[tuple[str, str], JsonSchemaMode, TypeAdapter[Any]]] = []
    for method, (params, result) in METHODS.items():
        inputs.append(((method, "params"), "validation", TypeAdapter(params)))
        inputs.append(((method, "result"), "serialization", TypeAdapter(result)))
    for method, shape in NOTIFICATIONS.items():
        inputs.append(((method, "params"), "serialization", TypeAdapter(shape)))
    for name, (shape, mode) in EXTRAS.items():
        inputs.append(((name, ""), mode, TypeAdapter(shape)))
    inputs.append((("Settings", ""), "validation", TypeAdapter(Settings)))
    refs, top = TypeAdapter.json_schemas(inputs, ref_template="#/$defs/{model}", schema_generator=_ContractSchema)
    defs: dict[str, JsonSchemaValue] = top.get("$defs", {})
    split = [name for name in defs if name.endswith(("-Input", "-Output"))]
    if split:
        raise ValueError(f"a shape is both read and written with different fields: {split}")
    # ConfigureParams takes any object, since each setting is validated on its own
    # (settings.updated_settings): what is sent is the Settings.
    defs["ConfigureParams"]["properties"]["settings"] = {"$ref": "#/$defs/Settings"}
    defs["RpcMethods"] = _closed(
        {
            m: _closed(
                {"params": refs[((m, "params"), "validation")], "result": refs[((m, "result"), "serialization")]}
            )
            for m in METHODS
        }
    )
    defs["RpcNotifications"] = _closed({m: refs[((m, "params"), "serialization")] for m in NOTIFICATIONS})
    contract = {"methods": {"$ref": "#/$defs/RpcMethods"}, "notifications": {"$ref": "#/$defs/RpcNotifications"}}
    contract.update({name: refs[((name, ""), mode)] for name, (_, mode) in EXTRAS.items()})
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "RpcContract", **_closed(contract)}
    defs_out = {name: _no_extra_fields(defs[name]) for name in sorted(_reachable(root, defs))}
    return {**root, "x-constants": CONSTANTS, "$defs": defs_out}


def _no_extra_fields(node: Any) -> Any:
    """Objects name all their fields: the sidecar ignores others it reads, and writes no others."""
    if isinstance(node, list):
        return [_no_extra_fields(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _no_extra_fields(value) for key, value in node.items()}
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _reachable(root: JsonSchemaValue, defs: dict[str, JsonSchemaValue]) -> set[str]:
    """The definitions the root refers to, directly or not (pydantic also keeps those of union members
    left out of the schema, UnknownIn's)."""
    seen: set[str] = set()
    todo: list[Any] = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and (name := ref.removeprefix("#/$defs/")) not in seen:
                seen.add(name)
                todo.append(defs[name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return seen


def main() -> None:
    json.dump(schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
