"""Tool names the gateway accepts (`^[a-zA-Z0-9_-]{1,64}$`), mapped both ways.

Editors name tools freely (`mcp.server/read file`); providers reject such names. Valid names pass
through untouched so that models see the names they were trained on.
"""

from __future__ import annotations

import hashlib
import re

_VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


class ToolNameMap:
    def __init__(self, names: list[str]) -> None:
        self._to_wire: dict[str, str] = {}
        self._from_wire: dict[str, str] = {}
        for name in names:
            if _VALID.match(name):
                self._bind(name, name)
        for name in names:
            if name not in self._to_wire:
                self._bind(name, self._unique(_sanitise(name)))

    def _bind(self, original: str, wire: str) -> None:
        self._to_wire[original] = wire
        self._from_wire[wire] = original

    def _unique(self, candidate: str) -> str:
        if candidate not in self._from_wire:
            return candidate
        for n in range(2, 10_000):
            suffix = f"_{n}"
            attempt = candidate[: 64 - len(suffix)] + suffix
            if attempt not in self._from_wire:
                return attempt
        raise ValueError("too many tools with colliding names")

    def to_wire(self, name: str) -> str:
        """The name we send; names not among the request's tools are sanitised the same way."""
        return self._to_wire.get(name) or _sanitise(name)

    def from_wire(self, name: str) -> str:
        return self._from_wire.get(name, name)


def _sanitise(name: str) -> str:
    cleaned = _INVALID_CHARS.sub("_", name) or "tool"
    if len(cleaned) <= 64:
        return cleaned
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{cleaned[:55]}_{digest}"
