"""Token counts: exact tiktoken encodings from shipped files, and request estimates vs real usage."""

from __future__ import annotations

import json
import random
import re
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_lm.gateway.client import encode_body
from gateway_lm.messages import MessageIn
from gateway_lm.tokens import tokenizer
from gateway_lm.tokens.tokenizer import (
    MAX_UNCUT,
    PIECE,
    RUN_PIECE,
    count_message,
    count_request,
    count_text,
    encoding,
    encoding_name_for,
    pieces,
    shipped_ranks,
)

FANTASY = Path(__file__).parent / "fixtures/fantasy"


def test_counts_are_exact_o200k_and_cl100k() -> None:
    assert count_text("openai/gpt-5", "hello world") == 2
    assert count_text("openai/gpt-4", "hello world") == 2
    assert count_text("anthropic/claude-sonnet-4.5", "") == 0
    assert encoding_name_for("openai/gpt-4o") == "o200k_base"
    assert encoding_name_for("openai/gpt-3.5-turbo") == "cl100k_base"
    # Special-token text is ordinary text in a user's file, never an error.
    assert count_text("openai/gpt-5", "<|endoftext|>") > 1


def test_shipped_files_are_the_verified_ones() -> None:
    assert len(shipped_ranks("o200k_base")) == 199998
    assert len(shipped_ranks("cl100k_base")) == 100256


def test_message_count_covers_text_calls_and_results() -> None:
    message = MessageIn.model_validate(
        {
            "role": 2,
            "content": [
                {"type": "text", "value": "hello world"},
                {"type": "toolCall", "callId": "c", "name": "read", "input": {"p": 1}},
            ],
        }
    )
    assert count_message("openai/gpt-5", message) > count_text("openai/gpt-5", "hello world") + 4


def real_input_tokens(name: str) -> int:
    text = (FANTASY / f"{name}.response.sse").read_text()
    return int(re.findall(r'"input_tokens":(\d+)', text)[-1])


@pytest.mark.parametrize(
    "name",
    sorted(p.name.removesuffix(".request.json") for p in FANTASY.glob("*.request.json") if "web-search" not in p.name),
)
def test_request_estimate_is_close_to_reported_usage(name: str) -> None:
    body = json.loads((FANTASY / f"{name}.request.json").read_text())
    estimate = count_request(body, str(body["model"]))
    real = real_input_tokens(name)
    assert abs(estimate - real) / real <= 0.03, (estimate, real)


def test_count_cli_prints_one_integer() -> None:
    path = FANTASY / "openai-gpt4o-parallel-tools.turn0.request.json"
    run = subprocess.run([sys.executable, "-m", "gateway_lm", "count", str(path)], capture_output=True, text=True)
    assert run.returncode == 0 and re.fullmatch(r"\d+\n", run.stdout)


ALPHABET = [" ", "  ", "\n", "\n\n", " \n", "\r\n", "\t", ".", ",", "/", "-", "'s", "1", "23", "a", "word"]
ALPHABET += ["é", "日本", "😀", "\u00a0", "\u3000"]


@settings(deadline=None, derandomize=True, database=None, max_examples=400)
@given(st.lists(st.sampled_from(ALPHABET), max_size=120), st.integers(min_value=1, max_value=24))
@pytest.mark.parametrize("model", ["openai/gpt-5", "openai/gpt-4"])
def test_a_long_text_counted_in_pieces_counts_exactly_as_a_whole(model: str, words: list[str], size: int) -> None:
    text = "".join(words)
    cut = list(pieces(text, size))
    assert "".join(cut) == text
    encoder = encoding(encoding_name_for(model))
    whole = len(encoder.encode(text, disallowed_special=()))
    assert sum(len(encoder.encode(p, disallowed_special=())) for p in cut) == whole


def test_pieces_are_bounded_where_the_text_allows_it() -> None:
    text = "lorem ipsum dolor " * 100_000
    assert max(len(p) for p in pieces(text)) < 2 * PIECE
    assert list(pieces("x" * (2 * PIECE))) == ["x" * (2 * PIECE)], "no safe cut: not cut, up to MAX_UNCUT past PIECE"


# What one count of a span without a cut point costs, in a process of its own: its peak memory.
HUGE_RUN = """
import random, resource, string
from gateway_lm.tokens.tokenizer import count_text, encoding
encoding("o200k_base").encode_ordinary("warm")
text = "".join(random.Random(7).choices(string.ascii_lowercase, k=8_000_000))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
count = count_text("openai/gpt-5", text)
print(count, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="ru_maxrss is POSIX's")
@pytest.mark.timeout(120)
def test_a_huge_span_without_a_cut_point_costs_bounded_memory_and_counts_close() -> None:
    # 8M random letters, one pre-token run: counted whole, far more memory and time (RFC 0005, "Huge counts").
    run = subprocess.run([sys.executable, "-c", HUGE_RUN], capture_output=True, text=True, timeout=110)
    assert run.returncode == 0, run.stderr
    count, grown_mb = map(int, run.stdout.split())
    assert grown_mb < 100, f"counting grew the process by {grown_mb} MB"
    assert 8_000_000 // 8 < count < 8_000_000
    # The estimate past MAX_UNCUT: a few tokens per cut, above the exact count.
    text = "".join(random.Random(3).choices(string.ascii_lowercase, k=2 * PIECE + MAX_UNCUT + 1))
    cut = list(pieces(text))
    assert "".join(cut) == text and max(len(p) for p in cut) <= RUN_PIECE
    encoder = encoding("o200k_base")
    exact = len(encoder.encode_ordinary(text))
    estimate = sum(len(encoder.encode_ordinary(p)) for p in cut)
    assert exact <= estimate <= exact + 4 * len(cut), (exact, estimate)


def test_a_long_text_counted_again_is_answered_from_memory_with_its_exact_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An agent loop sends its history again every turn, as new string objects: equal texts count once.
    text = "".join(f"line {i}: the history an agent loop sends again\n" for i in range(200))
    assert tokenizer.MEMO_MIN <= len(text) <= tokenizer.MEMO_MAX
    exact = len(encoding("o200k_base").encode_ordinary(text))
    assert count_text("anthropic/claude", text) == exact
    encoded: list[str] = []
    real = tokenizer.encoding
    monkeypatch.setattr(tokenizer, "encoding", lambda name: encoded.append(name) or real(name))
    assert count_text("anthropic/claude", "".join(list(text))) == exact  # an equal text, another object
    assert encoded == []
    assert count_text("openai/gpt-4", text) == len(encoding("cl100k_base").encode_ordinary(text))
    assert encoded == ["cl100k_base"], "counts are per encoding"
    changed = text[:-2] + "!\n"
    assert count_text("anthropic/claude", changed) == len(real("o200k_base").encode_ordinary(changed))


def test_the_remembered_counts_stay_within_their_bound_oldest_out_first() -> None:
    counts = tokenizer._Counts(max_chars=10_000)
    for n in range(10):
        counts.put(("o200k_base", f"{n:04d}" + "x" * 2996), n)
    assert counts.chars <= 10_000
    assert counts.get(("o200k_base", "0000" + "x" * 2996)) is None  # the oldest went first
    assert counts.get(("o200k_base", "0009" + "x" * 2996)) == 9


def agent_body(results: int, salt: str = "") -> dict[str, Any]:
    """An agent loop's request after `results` tool rounds: short texts and arguments, file contents."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Read the files {salt}."}]}
    ]
    for n in range(results):
        items += [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Step {n}: read."}]},
            {"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": json.dumps({"n": n})},
            {"type": "function_call_output", "call_id": f"c{n}", "output": f"{salt} file {n}\n" + "x = 1\n" * 50 * n},
        ]
    tools = [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file from the workspace, whole.",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer", "description": "Which file."}}},
        }
    ]
    instructions = "Be brief. Read each file once, and say what each one registers, one line a file."
    return {"model": "openai/gpt-5", "input": items, "instructions": instructions, "tools": tools}


def fresh(body: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(body))  # equal texts, other objects: as the next request parses them


@pytest.mark.parametrize("model", ["openai/gpt-5", "anthropic/claude", "openai/gpt-4"])
def test_a_grown_history_counts_only_its_new_items_and_exactly(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # An agent loop's next request repeats the last one's items: they are not encoded again (each
    # request counts them twice, to fit it and to calibrate; rfcs/0005, "The request path of a long session").
    salt = f"grown {model}"
    count_request(fresh(agent_body(8, salt)), model)
    encoded: list[str] = []
    real = tokenizer.encoding
    monkeypatch.setattr(tokenizer, "encoding", lambda name: encoded.append(name) or real(name))
    grown = fresh(agent_body(9, salt))
    counted = count_request(grown, model)
    assert len(encoded) <= 4, "only the new round's texts are encoded"
    monkeypatch.setattr(tokenizer, "_histories", tokenizer._Histories(tokenizer.HISTORY_TOKENS))
    monkeypatch.setattr(tokenizer, "_counts", tokenizer._Counts(tokenizer.MEMO_CHARS))
    monkeypatch.setattr(tokenizer, "_tool_counts", type(tokenizer._tool_counts)())
    assert counted == count_request(fresh(grown), model), "the same count as with nothing remembered"


def test_a_history_changed_inside_is_counted_again_from_the_change(monkeypatch: pytest.MonkeyPatch) -> None:
    body = fresh(agent_body(6, "changed"))
    first = count_request(body, "openai/gpt-5")
    changed = fresh(body)
    assert changed["input"][5]["type"] == "function_call"
    changed["input"][5]["arguments"] = json.dumps({"n": 1, "and": "a longer argument than before, in the middle"})
    trimmed = fresh(body)
    del trimmed["input"][3:6]
    counts = [count_request(other, "openai/gpt-5") for other in (changed, trimmed)]
    monkeypatch.setattr(tokenizer, "_histories", tokenizer._Histories(tokenizer.HISTORY_TOKENS))
    assert counts == [count_request(fresh(other), "openai/gpt-5") for other in (changed, trimmed)]
    assert first not in counts


def test_the_remembered_histories_stay_within_their_bound() -> None:
    histories = tokenizer._Histories(max_tokens=2_000)
    for n in range(20):
        histories.count("openai/gpt-5", fresh(agent_body(3, f"bound {n}"))["input"])
        assert histories.tokens <= 2_000
    few = tokenizer._Histories(max_tokens=1 << 20, max_lists=3)
    for n in range(10):
        few.count("openai/gpt-5", fresh(agent_body(2, f"few {n}"))["input"])
        assert len(few._lists) <= 3
    grown = [fresh(agent_body(k, "one session"))["input"] for k in range(1, 4)]
    before = len(histories._lists)
    for items in grown:
        histories.count("openai/gpt-5", items)
    assert len(histories._lists) <= before + 1, "a history that grows is one entry"


def test_a_tool_list_is_counted_once_and_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = agent_body(0, "tools")["tools"] * 3
    exact = tokenizer._count_functions("openai/gpt-5", tools)
    assert tokenizer.count_tools("openai/gpt-5", fresh({"t": tools})["t"]) == exact
    monkeypatch.setattr(tokenizer, "_count_functions", lambda model, functions: pytest.fail("counted again"))
    assert tokenizer.count_tools("openai/gpt-5", fresh({"t": tools})["t"]) == exact


def test_the_memos_keep_one_string_per_text_and_not_the_requests() -> None:
    # A string that is not ASCII keeps the UTF-8 copy the encoder or tiktoken made of it: the memos
    # share one string per text, and let the request's own go (rfcs/0005, "The request path of a long session").
    body = fresh(agent_body(3, "kept — not ASCII"))
    encode_body(body)
    count_request(body, "openai/gpt-5")
    grown = fresh(agent_body(4, "kept — not ASCII"))
    encode_body(grown)
    count_request(grown, "openai/gpt-5")
    for request in (body, grown):
        for item in request["input"]:
            if item["type"] != "function_call_output" or len(item["output"]) < tokenizer.MEMO_MIN:
                continue
            text = item["output"]
            kept = [key[1] for key in tokenizer._counts._counts if key[1] == text]
            remembered = [
                other["output"]
                for _, items, _ in tokenizer._histories._lists.values()
                for other in items
                if other.get("output") == text
            ]
            assert len(kept) == 1 and len(remembered) == 1
            assert kept[0] is remembered[0] and kept[0] is not text
