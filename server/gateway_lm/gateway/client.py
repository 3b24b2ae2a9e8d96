"""HTTP to the gateway: `POST {base}/responses` streamed as SSE; `GET {base}/models`, `/credits`,
`/generation` as JSON.

Retries happen only before the first event reached the caller (nothing shown can be shown twice):
429 (honouring `retry-after`; never a refusal for a spend budget, whatever its status), 500/502/503/504
and connection failures, with jittered exponential
backoff and a bounded count, all within one time budget (deadline.py). What is read is bounded too,
counted in decoded bytes and decoded a bounded piece at a time (decoding.py): an error body to 64 KiB,
the model list to 16 MiB, an SSE event to 16 MiB (sse.py).
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
import random
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import anyio
import httpx
import pydantic_core

from ..settings import Settings
from .deadline import Deadline
from .decoding import ACCEPT_ENCODING, PIECE, decoded
from .errors import (
    KEY_VARIABLES,
    CertificateError,
    GatewayError,
    certificate_error,
    error_from_response,
    invalid_key,
    is_certificate_error,
    shown,
    with_advice,
)
from .headers import with_headers
from .network import Route, route
from .sse import DONE, Event, SSEFramer, parse_event
from .transport import AiohttpTransport

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 20.0  # longer waits are the user's call, not a silent stall
MAX_REPORTED_RETRY_AFTER = 86_400.0  # a day; a longer `retry-after` is reported as this
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
MAX_ERROR_BODY = 64 << 10  # the gateway's words fit; an HTML page or a flood is cut
MAX_MODELS_BODY = 16 << 20  # the catalogue is ~0.3 MB
MAX_METRICS_BODY = 4 << 20  # the model metrics: 500 rows of ~1 KB at most (offer/metrics.py)
MAX_JSON_BODY = 1 << 20  # credits and a generation's record are a few hundred bytes
# App attribution (vercel.com/docs/ai-gateway/ecosystem/app-attribution), on every request.
APP_REFERER = "https://marketplace.visualstudio.com/items?itemName=ai-gateway-lm.ai-gateway-lm"
APP_TITLE = "Vercel AI Gateway for Copilot Chat"
# No cap on connections: each chat holds one for its whole answer, and a cap turned the 101st
# concurrent chat into a "timeout" while it waited for a free one.
LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=20)


def encode_body(body: Any) -> bytes:
    """A request body's bytes as httpx's `json=` writes them (`json.dumps`: UTF-8, compact, NaN
    refused). A long history is plain JSON data — dicts, lists, strings, integers — which
    pydantic-core's encoder writes to the same bytes in a fifth of the time (rfcs/0005, "The request
    path of a long session"); anything else (a float, whose exponent the two write differently: 1e-05
    against 0.00001) goes through `json.dumps`, as do bodies pydantic-core refuses (a lone surrogate)."""
    if _plain(body):
        try:
            return pydantic_core.to_json(body)
        except pydantic_core.PydanticSerializationError:
            pass  # json.dumps raises what httpx raised
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _plain(value: Any) -> bool:
    """Only dicts with string keys, lists, strings, integers, booleans and None (exact types, not subclasses)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if any(type(key) is not str for key in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is not str and kind is not int and kind is not bool and item is not None:
            return False
    return True


def resolve_api_key(explicit: str | None) -> str | None:
    """The request's key, else the environment's: refused (auth) when it cannot go out in a header,
    as a key in a request is (rpc/params.py), before an HTTP library refuses it as an internal error."""
    key = explicit or next((os.environ[name] for name in KEY_VARIABLES if os.environ.get(name)), None)
    refused = invalid_key(key, grouped=False) if key and not explicit else None
    if refused:
        raise refused
    return key


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait, from either form of the header: finite, ≥ 0 and at most a day (it travels to
    the extension as JSON, which has no Infinity); None for anything else."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
            seconds = (when - datetime.datetime.now(when.tzinfo)).total_seconds()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    if not math.isfinite(seconds):
        return None
    return min(max(0.0, seconds), MAX_REPORTED_RETRY_AFTER)


class GatewayClient:
    """One pooled connection set, shared by every request of a sidecar or CLI run."""

    def __init__(self, settings: Settings, platform: str = sys.platform) -> None:
        """`platform`: whose trust store verifies the gateway (network.ssl_context); tests choose."""
        self.settings = settings
        timeout = httpx.Timeout(
            connect=settings.connectTimeout,
            read=settings.idleTimeout,
            write=settings.connectTimeout,
            pool=settings.connectTimeout,
        )
        self.route = route(settings, platform)
        self._http = httpx.AsyncClient(
            timeout=timeout,
            limits=LIMITS,
            verify=self.route.verify,  # what httpx's own transports use: those through a proxy
            mounts={"all://": self._transport(self.route)},
            trust_env=self.route.use_env,
        )

    @staticmethod
    def _transport(route: Route) -> httpx.AsyncBaseTransport:
        if route.proxy is not None:
            return httpx.AsyncHTTPTransport(proxy=route.proxy, verify=route.verify, limits=LIMITS)
        # Mounted for every URL rather than passed as `transport=`, which would turn off the proxies
        # httpx takes from the environment (their more specific mounts win, and go through httpx).
        return AiohttpTransport(route.direct_verify)

    @property
    def base_url(self) -> str:
        return self.settings.baseUrl.rstrip("/")

    async def aclose(self) -> None:
        await self._http.aclose()

    def _headers(self, api_key: str | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        # The model's extra headers replace ours of the same name in any case (rfcs/0007): one of each
        # goes out. options.py refuses `accept` and `authorization` there, so those are always ours.
        ours = {
            "accept": "text/event-stream",
            "accept-encoding": ACCEPT_ENCODING,
            "user-agent": "ai-gateway-lm",
            "http-referer": APP_REFERER,
            "x-title": APP_TITLE,
        }
        headers = with_headers(ours, extra or {})
        token = resolve_api_key(api_key)
        if token:
            headers["authorization"] = f"Bearer {token}"
        return headers

    async def stream_events(
        self,
        body: dict[str, Any],
        api_key: str | None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """Parsed JSON events of one response, in order, in batches (one per network read).
        Ends at `[DONE]` or when the server closes. `content`: the body already encoded (`encode_body`)."""
        url = f"{self.base_url}/responses"
        deadline = Deadline(self.settings.idleTimeout, self.settings.requestTimeout)
        attempt = 0
        content = encode_body(body) if content is None else content  # once, for every attempt
        while True:
            request = self._http.build_request("POST", url, content=content, headers=self._headers(api_key, headers))
            request.headers.setdefault("Content-Type", "application/json")  # where `json=` puts it
            try:
                response = await deadline.run(self._http.send(request, stream=True))
            except httpx.TransportError as exc:
                error = self._transport_error(exc)
            else:
                try:
                    if response.status_code == 200:
                        async for events in self._events(response, deadline):
                            yield events
                        return
                    error = await self._error_for(response, deadline)
                finally:
                    await response.aclose()
            delay = self._retry_delay(error, attempt, deadline)
            if delay is None:
                raise error
            attempt += 1
            log.warning("retrying after %s (attempt %d): %s", f"{delay:.2f}s", attempt, error.for_log())
            await anyio.sleep(delay)

    async def _events(self, response: httpx.Response, deadline: Deadline) -> AsyncIterator[list[dict[str, Any]]]:
        """Events, one list per network read, so the caller's work per event stays synchronous."""
        content_type = response.headers.get("content-type", "")
        if "text/event-stream" not in content_type:
            raise GatewayError(
                "protocol", with_advice("protocol", f"Expected an event stream, got '{shown(content_type)}'")
            )
        framer = SSEFramer()
        chunks = decoded(response)
        try:
            while True:
                try:
                    chunk = await deadline.run(anext(chunks))
                except StopAsyncIteration:
                    break
                events, done = self._parse(framer.feed(chunk))
                if events:
                    deadline.data()
                    yield events
                if done:
                    return
            events, _ = self._parse(framer.close())
            if events:
                yield events
        except httpx.ReadTimeout:
            raise deadline.expired() from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise GatewayError(
                "network", with_advice("network", f"The connection to the gateway broke mid-answer ({exc})")
            ) from None
        except httpx.DecodingError:
            raise self._undecodable(response) from None

    @staticmethod
    def _parse(sses: list[Event]) -> tuple[list[dict[str, Any]], bool]:
        events: list[dict[str, Any]] = []
        for sse in sses:
            event = parse_event(sse)
            if event is DONE:
                return events, True
            _, data = sse
            if isinstance(event, dict):
                events.append(event)
            elif data:
                log.warning("ignored an event that is not a JSON object (%d bytes)", len(data))
        return events, False

    def _transport_error(self, exc: httpx.TransportError) -> GatewayError:
        if isinstance(exc, httpx.PoolTimeout):
            return GatewayError("network", with_advice("network", "No free connection to the gateway"))
        if isinstance(exc, httpx.TimeoutException):
            detail = (
                f"The gateway at {self.base_url} did not answer within {self.settings.connectTimeout:g} s"
                " (the connectTimeout setting)"
            )
            return GatewayError("timeout", with_advice("timeout", detail))
        if is_certificate_error(exc):
            return certificate_error(self.base_url, self.route.proxied)
        return GatewayError(
            "network", with_advice("network", f"Cannot reach {self.base_url} ({exc or type(exc).__name__})")
        )

    @staticmethod
    def _undecodable(response: httpx.Response) -> GatewayError:
        encoding = response.headers.get("content-encoding", "none")
        return GatewayError(
            "protocol", with_advice("protocol", f"The gateway's answer could not be decoded (encoding '{encoding}')")
        )

    async def _error_for(self, response: httpx.Response, deadline: Deadline) -> GatewayError:
        try:
            body = await _read_at_most(response, MAX_ERROR_BODY, deadline)
        except (httpx.HTTPError, GatewayError):
            body = b""  # the status alone still says what happened
        return error_from_response(response.status_code, body, parse_retry_after(response.headers.get("retry-after")))

    def _retry_delay(self, error: GatewayError, attempt: int, deadline: Deadline) -> float | None:
        """How long to wait before the next attempt; None when there is none (the count is spent, the
        error is final, or the wait would not leave time for another attempt)."""
        if attempt >= self.settings.maxRetries or isinstance(error, CertificateError):
            return None
        if error.kind == "gateway_budget":  # a spent budget stays spent: only its owner changes it
            return None
        if error.retry_after is not None and error.retry_after > MAX_RETRY_AFTER:
            return None
        if error.kind not in ("network", "timeout") and error.status not in RETRY_STATUSES:
            return None
        delay = self._delay(attempt, error.retry_after)
        return delay if deadline.allows(delay) else None

    @staticmethod
    def _delay(attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        ceiling = min(BACKOFF_CAP, BACKOFF_BASE * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)

    async def list_models(self, api_key: str | None = None) -> list[dict[str, Any]]:
        payload = await self.get_json("/models", api_key, limit=MAX_MODELS_BODY)
        data = payload.get("data") if isinstance(payload, dict) else None
        return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []

    async def model_metrics(self, api_key: str | None, query: dict[str, str]) -> Any:
        """`GET {base}/models/metrics`, parsed, unread: offer/metrics.py reads it."""
        return await self.get_json("/models/metrics", api_key, params=query, limit=MAX_METRICS_BODY)

    async def get_json(
        self, path: str, api_key: str | None, params: dict[str, str] | None = None, limit: int = MAX_JSON_BODY
    ) -> Any:
        """`GET {base}{path}`, parsed. Any failure is a GatewayError; an HTTP one keeps its status."""
        url = f"{self.base_url}{path}"
        deadline = Deadline(self.settings.idleTimeout, self.settings.requestTimeout)
        headers = self._headers(api_key) | {"accept": "application/json"}
        try:
            request = self._http.build_request("GET", url, headers=headers, params=params)
            response = await deadline.run(self._http.send(request, stream=True))
            try:
                if response.status_code != 200:
                    raise await self._error_for(response, deadline)
                content = await _read_at_most(response, limit + 1, deadline)
            finally:
                await response.aclose()
        except httpx.TransportError as exc:
            raise self._transport_error(exc) from None
        except httpx.HTTPError as exc:  # e.g. an undecodable body
            raise GatewayError("protocol", with_advice("protocol", f"{url} answered badly ({exc})")) from None
        if len(content) > limit:
            raise GatewayError("protocol", with_advice("protocol", f"{url} sent more than {limit >> 10} KiB"))
        try:
            return json.loads(content)
        except (ValueError, RecursionError):
            raise GatewayError("protocol", with_advice("protocol", f"{url} did not answer JSON")) from None


async def _read_at_most(response: httpx.Response, limit: int, deadline: Deadline) -> bytes:
    """The start of the (decoded) body, `limit` bytes at most; the rest is never read, nor decoded."""
    body = bytearray()
    chunks = decoded(response, min(limit, PIECE))
    while len(body) < limit:
        try:
            body += await deadline.run(anext(chunks))
        except StopAsyncIteration:
            break
    return bytes(body[:limit])
