"""What an HTTP header the gateway is sent may hold, and how a model's extra headers go over ours:
one rule for every header a setting gives (`modelOptions.extraHeaders`, `http.proxyAuthorization`)
and for the client that sends them."""

from __future__ import annotations

import re
from collections.abc import Mapping

MAX_HEADER_VALUE = 8 << 10
# Ours (the key), HTTP's (hop-by-hop, framing) or the stream's (what we accept and decode).
FORBIDDEN_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "proxy-authenticate",
        "proxy-connection",
        "host",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "content-length",
        "content-type",
        "content-encoding",
        "accept",
        "accept-encoding",
    }
)
TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")  # RFC 9110 field name
# A header value as every transport sends it: printable ASCII, spaces and tabs (RFC 9110's field
# content less obs-text, which httpx cannot encode: a non-ASCII value failed every chat with
# UnicodeEncodeError). Line breaks, NUL and the other controls are out with it.
_HEADER_VALUE = re.compile(r"^[\t\x20-\x7e]*$")


def header_value_problem(text: str) -> str | None:
    """Why `text` cannot be sent as a header's value, or None (the one rule for every header a setting
    gives: `extraHeaders`, `http.proxyAuthorization`)."""
    if len(text) > MAX_HEADER_VALUE:
        return f"is longer than {MAX_HEADER_VALUE >> 10} KiB"
    if not _HEADER_VALUE.match(text):
        return "may hold only printable ASCII on one line (no line breaks, control characters or non-ASCII letters)"
    return None


def with_headers(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """`extra` over `base`, a header of `extra` replacing `base`'s of the same name in any case
    (`X-Title` replaces `x-title`): one header of each name goes out. The client puts the model's
    extra headers over its own with it."""
    replaced = {name.lower() for name in extra}
    return {**{name: value for name, value in base.items() if name.lower() not in replaced}, **extra}
