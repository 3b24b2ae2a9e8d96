"""The two time limits of one gateway request (rfcs/0001-architecture.md, Limits).

- `idleTimeout`: the longest wait for data. The clock starts with the request and restarts at each
  event that carries data, and only then: keepalive comments, blank lines or a line trickling in a
  byte at a time do not restart it (httpx's read timeout, which restarts on every byte, is only a
  backstop). Retries before the first event run on the same clock, so they cannot multiply it.
- `requestTimeout`: the whole request, retries and backoff included.

Each wait is an anyio cancel scope around one await, never around a `yield`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import anyio

from .errors import GatewayError, with_advice

T = TypeVar("T")


class Deadline:
    def __init__(self, idle: float, total: float) -> None:
        now = anyio.current_time()
        self.idle = idle
        self.total = total
        self._idle_until = now + idle
        self._end = now + total

    def data(self) -> None:
        """Data arrived: the idle clock starts again."""
        self._idle_until = anyio.current_time() + self.idle

    def allows(self, delay: float) -> bool:
        """Whether a wait of `delay` seconds still leaves time for another attempt."""
        return anyio.current_time() + delay < min(self._idle_until, self._end)

    async def run(self, work: Awaitable[T]) -> T:
        """`work`'s result, or a `timeout` GatewayError naming the limit that ran out first."""
        with anyio.CancelScope(deadline=min(self._idle_until, self._end)):
            return await work
        raise self.expired()

    def expired(self) -> GatewayError:
        if self._end <= self._idle_until:
            detail = f"The answer was not complete after {self.total:g} s (the requestTimeout setting)"
        else:
            detail = f"No data from the gateway for {self.idle:g} s (the idleTimeout setting)"
        return GatewayError("timeout", with_advice("timeout", detail))
