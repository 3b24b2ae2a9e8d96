"""The httpx-sse internals sse.py relies on, all here (httpx-sse==0.4.3, pinned in pyproject.toml).

rfcs/0005-performance.md, "Private hooks", lists them with why and the test that guards them
(tests/test_hooks.py): check that list before moving httpx-sse to another version.
- `httpx_sse._decoders.SSELineDecoder`: the line decoder that `EventSource.aiter_sse()` drives
  through four nested async generators; sse.py feeds it one network read at a time instead.
- `SSELineDecoder.buffer`: the pieces of the line not finished yet, which sse.py bounds (MAX_EVENT).
"""

from __future__ import annotations

from httpx_sse._decoders import SSELineDecoder

__all__ = ["SSELineDecoder"]
