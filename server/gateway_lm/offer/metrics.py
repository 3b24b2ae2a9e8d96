"""How fast and how reliable each model is, as the gateway measures it: its `GET {base}/models/metrics`
answer (one row per model and provider: time to first token and output tokens per second over the
last hour, uptime over 15 minutes, an hour and a day; rfcs/0003-rpc-contract.md, "Model metrics")
→ one `ModelMetrics` per model, which the picker's tooltip and the extension's lists show.

The answer is untrusted: a row whose id, provider or numbers are not what the endpoint documents is
dropped (one log line per answer), and an answer that is not such a list is no metrics at all.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..messages import MAX_MODEL_ID
from .catalogue import SAFE_ID_PATTERN

log = logging.getLogger(__name__)

# What `gateway/models` asks for: language models only, and as many rows as the endpoint gives (its
# SDK documents `limit` "up to 500"; rows are model × provider).
QUERY = {"type": "language", "limit": "500"}
MAX_ROWS = 2_000  # rows read of one answer; past the endpoint's own 500, the rest is not looked at
MAX_PROVIDER_NAME = 64  # a provider's slug (`anthropic`, `bedrock`); it is shown in the tooltip
MAX_MS = 600_000.0  # ten minutes to a first token is no measurement of a working model
MAX_TPS = 100_000.0  # tokens per second; today's fastest serve a few thousand
SAMPLES = 10**12

Ms = Annotated[float, Field(ge=0, le=MAX_MS)]
Tps = Annotated[float, Field(ge=0, le=MAX_TPS)]
Percent = Annotated[float, Field(ge=0, le=100)]


class _Row(BaseModel):
    """What is read of a group's provenance (`meta`): how many samples it was measured over."""

    model_config = ConfigDict(allow_inf_nan=False)


class _Meta(_Row):
    sample_size: int | None = Field(default=None, ge=0, le=SAMPLES)


class _Latency(_Row):
    """Time to first token, milliseconds."""

    p50: Ms | None = None
    p95: Ms | None = None
    meta: _Meta | None = None


class _Throughput(_Row):
    """Output tokens per second."""

    p50: Tps | None = None
    p95: Tps | None = None
    meta: _Meta | None = None


class _Uptime(_Row):
    """Percent of requests that succeeded, 0 to 100."""

    last_15m: Percent | None = None
    last_1h: Percent | None = None
    last_1d: Percent | None = None


class MetricsRow(_Row):
    """One row of the answer: a model as one provider serves it. Every field but the id may be left
    out or null (a catalogue-only row has no provider and no measurement)."""

    id: str = Field(min_length=1, max_length=MAX_MODEL_ID, pattern=SAFE_ID_PATTERN)
    provider: str | None = Field(default=None, min_length=1, max_length=MAX_PROVIDER_NAME, pattern=SAFE_ID_PATTERN)
    latency_last_1h: _Latency | None = None
    throughput_last_1h: _Throughput | None = None
    uptime: _Uptime | None = None

    def samples(self) -> int:
        groups = (self.latency_last_1h, self.throughput_last_1h)
        return max((g.meta.sample_size or 0 for g in groups if g is not None and g.meta is not None), default=0)

    def measured(self) -> bool:
        return self.latency_last_1h is not None or self.throughput_last_1h is not None or self.uptime is not None


class ModelMetrics(BaseModel):
    """A model's metrics as the picker shows them: those of the provider that served the most of its
    requests in the last hour (most samples; the gateway's likeliest route), rounded as shown.
    None where the gateway measured nothing."""

    provider: str | None
    providers: int  # how many providers of the model the gateway measured
    firstTokenMs: int | None  # median time to first token
    firstTokenP95Ms: int | None
    tokensPerSecond: int | None  # median output throughput
    uptimePercent: float | None  # the last hour's, else the last day's, else the last 15 minutes'
    summary: str  # "First token <median> (p95 <p95>) · <n> tokens/s · <n> % up": what every place shows


def metrics_from(payload: Any) -> dict[str, ModelMetrics] | None:
    """The answer's metrics by model id; None when it is not the endpoint's list (the caller says so
    once). A row that cannot be read is dropped, one warning for all of them."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    rows: list[MetricsRow] = []
    unreadable = 0
    for raw in data[:MAX_ROWS]:
        try:
            rows.append(MetricsRow.model_validate(raw))
        except ValidationError:
            unreadable += 1
    if unreadable:
        log.warning("ignored %d model metrics rows that could not be read", unreadable)
    if data and not rows:
        return None  # not one row as documented: not the endpoint we know
    by_model: dict[str, list[MetricsRow]] = {}
    for row in rows:
        if row.measured():
            by_model.setdefault(row.id, []).append(row)
    summarised = {model: _summarised(listed) for model, listed in by_model.items()}
    return {model: metrics for model, metrics in summarised.items() if metrics.summary}  # groups of nulls: nothing


def _summarised(rows: list[MetricsRow]) -> ModelMetrics:
    best = max(rows, key=lambda row: row.samples())  # the first listed of equals
    latency, throughput, uptime = best.latency_last_1h, best.throughput_last_1h, best.uptime
    first = _ms(latency.p50) if latency else None
    p95 = _ms(latency.p95) if latency else None
    tps = round(throughput.p50) if throughput and throughput.p50 is not None else None
    up = next((u for u in (uptime.last_1h, uptime.last_1d, uptime.last_15m) if u is not None), None) if uptime else None
    up = None if up is None else round(up, 1)
    return ModelMetrics(
        provider=best.provider,
        providers=len({row.provider for row in rows}),
        firstTokenMs=first,
        firstTokenP95Ms=p95,
        tokensPerSecond=tps,
        uptimePercent=up,
        summary=summary(first, p95, tps, up),
    )


def summary(first: int | None, p95: int | None, tps: int | None, up: float | None) -> str:
    parts = []
    if first is not None:
        parts.append(f"First token {seconds(first)}" + (f" (p95 {seconds(p95)})" if p95 is not None else ""))
    if tps is not None:
        parts.append(f"{tps} tokens/s")
    if up is not None:
        parts.append(f"{up:g} % up")
    return " · ".join(parts)


def seconds(ms: int) -> str:
    """Two significant digits below ten seconds (0.35 s, 1.2 s), whole seconds above."""
    return f"{ms / 1000:.2g} s" if ms < 10_000 else f"{ms / 1000:.0f} s"


def _ms(value: float | None) -> int | None:
    return None if value is None else round(value)
