"""HTTP to the gateway: `POST {base}/responses` streamed as SSE, `GET {base}/models`.

Retries happen only before the first event reached the caller (nothing shown can be shown twice):
429 (honouring `retry-after`), 500/502/503/504 and connection failures, with jittered exponential
backoff and a bounded count. The idle timeout is httpx's read timeout: the longest silence allowed
between two reads of the stream.
"""

from __future__ import annotations

import datetime
import logging
import math
import os
import random
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from email.utils import parsedate_to_datetime
from typing import Any

import anyio
import httpx
from httpx_sse import ServerSentEvent

from .errors import GatewayError, error_from_response, with_advice
from .protocol import Settings
from .sse import DONE, SSEFramer, parse_event

log = logging.getLogger("gateway_lm.client")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 20.0  # longer waits are the user's call, not a silent stall
MAX_REPORTED_RETRY_AFTER = 86_400.0  # a day; a longer `retry-after` is reported as this
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0


def resolve_api_key(explicit: str | None) -> str | None:
    return explicit or os.environ.get("AI_GATEWAY_API_KEY") or os.environ.get("VERCEL_OIDC_TOKEN") or None


def _verify(settings: Settings) -> ssl.SSLContext | bool:
    """A custom CA bundle (corporate proxies); an unreadable one is reported, not fatal."""
    if settings.caBundle:
        try:
            return ssl.create_default_context(cafile=settings.caBundle)
        except (OSError, ssl.SSLError) as error:
            log.error("the CA bundle %s cannot be used (%s); using the system's certificates", settings.caBundle, error)
    return True


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

    def __init__(self, settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        timeout = httpx.Timeout(
            connect=settings.connectTimeout,
            read=settings.idleTimeout,
            write=settings.connectTimeout,
            pool=settings.connectTimeout,
        )
        self._http = httpx.AsyncClient(timeout=timeout, verify=_verify(settings), transport=transport, trust_env=True)

    @property
    def base_url(self) -> str:
        return self.settings.baseUrl.rstrip("/")

    async def aclose(self) -> None:
        await self._http.aclose()

    def _headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"accept": "text/event-stream", "user-agent": "ai-gateway-lm"}
        token = resolve_api_key(api_key)
        if token:
            headers["authorization"] = f"Bearer {token}"
        return headers

    async def stream_events(
        self, body: dict[str, Any], api_key: str | None
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """Parsed JSON events of one response, in order, in batches (one per network read).
        Ends at `[DONE]` or when the server closes."""
        url = f"{self.base_url}/responses"
        attempt = 0
        while True:
            try:
                async with self._http.stream("POST", url, json=body, headers=self._headers(api_key)) as response:
                    if response.status_code != 200:
                        error = await self._error_for(response)
                        if not self._should_retry(error, attempt):
                            raise error
                        delay = self._delay(attempt, error.retry_after)
                    else:
                        async for events in self._events(response):
                            yield events
                        return
            except httpx.TransportError as exc:
                error = self._transport_error(exc)
                if not self._should_retry(error, attempt):
                    raise error from None
                delay = self._delay(attempt, None)
            attempt += 1
            log.warning("retrying after %s (attempt %d): %s", f"{delay:.2f}s", attempt, error.message)
            await anyio.sleep(delay)

    async def _events(self, response: httpx.Response) -> AsyncIterator[list[dict[str, Any]]]:
        """Events, one list per network read, so the caller's work per event stays synchronous."""
        content_type = response.headers.get("content-type", "")
        if "text/event-stream" not in content_type:
            raise GatewayError("protocol", with_advice("protocol", f"Expected an event stream, got '{content_type}'"))
        framer = SSEFramer()
        try:
            async for chunk in response.aiter_bytes():
                events, done = self._parse(framer.feed(chunk))
                if events:
                    yield events
                if done:
                    return
            events, _ = self._parse(framer.close())
            if events:
                yield events
        except httpx.ReadTimeout:
            raise GatewayError(
                "timeout",
                with_advice("timeout", f"No data from the gateway for {self.settings.idleTimeout:g} s"),
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise GatewayError(
                "network", with_advice("network", f"The connection to the gateway broke mid-answer ({exc})")
            ) from None

    @staticmethod
    def _parse(sses: list[ServerSentEvent]) -> tuple[list[dict[str, Any]], bool]:
        events: list[dict[str, Any]] = []
        for sse in sses:
            event = parse_event(sse)
            if event is DONE:
                return events, True
            if isinstance(event, dict):
                events.append(event)
            elif sse.data:
                log.warning("ignored an event that is not a JSON object (%d bytes)", len(sse.data))
        return events, False

    def _transport_error(self, exc: httpx.TransportError) -> GatewayError:
        if isinstance(exc, httpx.TimeoutException):
            return GatewayError(
                "timeout", with_advice("timeout", f"The gateway at {self.base_url} did not answer in time")
            )
        return GatewayError(
            "network", with_advice("network", f"Cannot reach {self.base_url} ({exc or type(exc).__name__})")
        )

    async def _error_for(self, response: httpx.Response) -> GatewayError:
        try:
            body = await response.aread()
        except httpx.HTTPError:
            body = b""
        return error_from_response(
            response.status_code, body[:65536], parse_retry_after(response.headers.get("retry-after"))
        )

    def _should_retry(self, error: GatewayError, attempt: int) -> bool:
        if attempt >= self.settings.maxRetries:
            return False
        if error.retry_after is not None and error.retry_after > MAX_RETRY_AFTER:
            return False
        return error.kind in ("network", "timeout") or error.status in RETRY_STATUSES

    @staticmethod
    def _delay(attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        ceiling = min(BACKOFF_CAP, BACKOFF_BASE * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)

    async def list_models(self, api_key: str | None = None) -> list[dict[str, Any]]:
        url = f"{self.base_url}/models"
        try:
            response = await self._http.get(url, headers=self._headers(api_key) | {"accept": "application/json"})
        except httpx.TransportError as exc:
            raise self._transport_error(exc) from None
        except httpx.HTTPError as exc:  # e.g. an undecodable body
            raise GatewayError("protocol", with_advice("protocol", f"{url} answered badly ({exc})")) from None
        if response.status_code != 200:
            raise error_from_response(response.status_code, response.content[:65536])
        try:
            payload = response.json()
        except ValueError:
            raise GatewayError("protocol", with_advice("protocol", f"{url} did not answer JSON")) from None
        data = payload.get("data") if isinstance(payload, dict) else None
        return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []
