"""Text from outside, printed to a terminal (the CLI): a gateway's model name, error text, answer or
a usage record may hold control characters, and a terminal obeys them — an OSC 52 sequence writes
the clipboard, `ESC [2J` clears the screen, a carriage return or a line break forges a line of our
output. `printable` is the one rule, for every string the CLI prints (rfcs/0006-spend.md, "CLI").
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL (the terminal's commands), the bidirectional overrides and isolates
# (text that reads other than it is stored), the Unicode line and paragraph separators, and lone
# surrogates (JSON's `\ud800` carries one; no terminal encoding can write it, and the print failed).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")
_UNSAFE_BUT_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    # \uXXXX is also a JSON escape: JSON text passed through here stays JSON (json.dumps has already
    # escaped the C0 controls, the only ones written another way).
    return _NAMED.get(char) or f"\\u{ord(char):04x}"


def printable(text: str, lines: bool = False) -> str:
    """`text` with every control character written as an escape (`\\x1b` → `\\u001b`). `lines`: an
    answer's own line breaks and tabs stay (a field of a line we print keeps none)."""
    return (_UNSAFE_BUT_LINES if lines else _UNSAFE).sub(_escape, text)
