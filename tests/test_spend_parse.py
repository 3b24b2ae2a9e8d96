"""What the gateway says about money is untrusted (gateway_lm/spend/lookups.py): each field is read on its
own, and one that cannot be read is unknown, never a failure and never a number JSON cannot carry."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway_lm.spend.lookups import generation_from, read_usd
from gateway_lm.stream.usage import generation_id_from

HOSTILE = [None, True, "NaN", "Infinity", "-1", "1e400", float("nan"), float("inf"), -5, [], {}, "x" * 10_000]


def test_hostile_generation_fields_are_unknown() -> None:
    for value in HOSTILE:
        payload = {
            "data": {
                "total_cost": value,
                "provider_name": value if not isinstance(value, str) else 7,
                "is_byok": value if not isinstance(value, bool) else "yes",
                "native_tokens_prompt": value,
                "native_tokens_cache_creation": value,
            }
        }
        generation = generation_from(payload)
        assert generation is not None
        assert generation.cost is None
        assert generation.provider is None and generation.byok is None
        assert generation.input_tokens is None and generation.cache_write_tokens is None


def test_a_payload_without_a_record_is_no_generation() -> None:
    for payload in (None, [], {"data": None}, {"data": []}, {"error": {"message": "not found"}}):
        assert generation_from(payload) is None


def test_decimal_strings_read_as_usd() -> None:
    assert read_usd("95.50") == 95.5 and read_usd(0.00123) == 0.00123
    assert read_usd("-3.25") is None and read_usd("-3.25", signed=True) == -3.25


def test_a_generation_id_is_read_from_provider_metadata_only_when_it_is_text() -> None:
    assert generation_id_from({"providerMetadata": {"gateway": {"generationId": "gen_1"}}}) == "gen_1"
    assert generation_id_from({"provider_metadata": {"gateway": {"generation_id": "gen_2"}}}) == "gen_2"
    for bad in (None, 5, "", "g" * 201, ["gen_1"]):
        assert generation_id_from({"providerMetadata": {"gateway": {"generationId": bad}}}) is None
    assert generation_id_from({"providerMetadata": "gen_1"}) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=10,
)
FIELDS = ["total_cost", "provider_name", "is_byok", "native_tokens_prompt", "native_tokens_completion"]
FIELDS += ["native_tokens_reasoning", "native_tokens_cached", "native_tokens_cache_creation"]


@given(st.fixed_dictionaries({name: JSON for name in FIELDS}))
def test_any_values_read_without_error_and_write_finite(data: dict[str, Any]) -> None:
    generation = generation_from({"data": data})
    assert generation is not None
    json.dumps(generation.__dict__, allow_nan=False)  # raises on NaN or Infinity
    assert generation.cost is None or 0 <= generation.cost
