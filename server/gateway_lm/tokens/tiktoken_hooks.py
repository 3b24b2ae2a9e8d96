"""The tiktoken internals tokenizer.py relies on, all here (tiktoken==0.14.0, pinned in pyproject.toml).

rfcs/0005-performance.md, "Private hooks", lists them with why and the test that guards them
(tests/test_hooks.py): check that list before moving tiktoken to another version.
- `tiktoken_ext.openai_public.load_tiktoken_bpe`, replaced while one of that module's constructors
  runs: the constructor supplies the regex and special tokens, we supply the ranks (from a file
  that ships in a package, never downloaded).
- `Encoding._mergeable_ranks`: the Python copy of the ranks (~23 MB), emptied once built.
"""

from __future__ import annotations

from typing import Any

import tiktoken
from tiktoken_ext import openai_public  # type: ignore[import-untyped]


def encoding_spec(name: str, ranks: dict[bytes, int]) -> dict[str, Any]:
    """tiktoken's own constructor arguments for the encoding `name`, with `ranks` as its ranks. The
    loader is a module global: callers build one encoding at a time (tokenizer.encoding's lock)."""
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: ranks
    try:
        spec: dict[str, Any] = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = original
    return spec


def without_python_ranks(encoding: tiktoken.Encoding) -> tiktoken.Encoding:
    """We only encode, and the Rust core keeps its own copy of the ranks: drop the Python dict."""
    encoding._mergeable_ranks = {}
    return encoding
