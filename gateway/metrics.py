"""Prometheus metrics named in the contract, in one registry the gateway exposes at `/metrics`.

Every layer imports its counters from here, so the names and labels stay in one place.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase


class Children(dict[tuple[Any, ...], Any]):
    """One metric's label children, by their label values in label order: `c[tenant, layer].inc()`.

    `metric.labels(...)` validates and stringifies the values and takes a lock on every call, a few
    microseconds that the request path pays several times per request; a dict lookup on the values
    is a fraction of that. The first use of a label set still goes through `labels()`, so a series
    appears in /metrics only once it is counted, as before. Holds no more than the metric itself:
    prometheus keeps every child it made, and the gateway never removes a label set (a metric's
    `remove()`/`clear()` would leave children here that no longer export).
    """

    def __init__(self, metric: MetricWrapperBase) -> None:
        super().__init__()
        self.metric = metric

    def __missing__(self, values: tuple[Any, ...]) -> Any:
        child = self[values] = self.metric.labels(*values)
        return child


REGISTRY = CollectorRegistry(auto_describe=True)

# Latency buckets: a cache hit is ~1 ms, a vendor answer seconds to minutes.
_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

REQUESTS = Counter(
    "gateway_requests_total", "Requests answered, by tenant, provider, model and cache outcome.",
    ["tenant", "provider", "model", "cache"], registry=REGISTRY,
)
CACHE_LOOKUPS = Counter(
    "gateway_cache_lookups_total", "Cache lookups by layer and result (hit, miss, error, skip).",
    ["layer", "result"], registry=REGISTRY,
)
TOKENS = Counter(
    "gateway_tokens_total", "Tokens by kind (input, cached_input, cache_write, cache_read, output).",
    ["tenant", "provider", "kind"], registry=REGISTRY,
)
COST = Counter("gateway_cost_usd_total", "Cost paid, USD.", ["tenant", "provider"], registry=REGISTRY)
SAVED_COST = Counter(
    "gateway_saved_cost_usd_total", "Cost saved by each cache layer, USD.", ["tenant", "layer"], registry=REGISTRY,
)
TTFT = Histogram(
    "gateway_time_to_first_token_seconds", "Time from request to the first byte of the answer.",
    ["provider"], buckets=_LATENCY, registry=REGISTRY,
)
DURATION = Histogram(
    "gateway_request_duration_seconds", "Time from request to the last byte of the answer.",
    ["provider", "cache"], buckets=_LATENCY, registry=REGISTRY,
)
UPSTREAM_ERRORS = Counter(
    "gateway_upstream_errors_total", "Upstream errors by provider and status (or 'connect', 'timeout').",
    ["provider", "status"], registry=REGISTRY,
)
ROUTE_DECISIONS = Counter(
    "gateway_route_decisions_total", "Routing decisions by pool, replica and reason.",
    ["pool", "replica", "reason"], registry=REGISTRY,
)
STAGE_ERRORS = Counter(
    "gateway_stage_errors_total", "Stage failures that were logged and skipped (fail-open).",
    ["stage", "phase"], registry=REGISTRY,
)
STORE_ERRORS = Counter(
    "gateway_store_errors_total", "Store calls that failed or were refused by an open circuit breaker.",
    ["store", "kind"], registry=REGISTRY,
)
PROVIDER_CACHE_DECISIONS = Counter(
    "gateway_provider_cache_decisions_total", "Break-even decisions of the provider-cache layer.",
    ["provider", "decision"], registry=REGISTRY,
)
PREFIX_HIT_RATE = Gauge(
    "gateway_vllm_prefix_cache_hit_rate", "Prefix-cache hit rate per vLLM pool, from the replicas' own counters.",
    ["pool"], registry=REGISTRY,
)

# ---- usage accounting (gateway/usage) ----------------------------------------------------------
CACHE_OVERHEAD = Counter(
    "gateway_provider_cache_overhead_usd_total",
    "What provider caches cost beyond the plain input price, USD: write premium and explicit-cache "
    "storage (net provider saving = saved_cost{layer=provider} − this).",
    ["tenant", "provider"], registry=REGISTRY,
)
USAGE_PENDING = Gauge(
    "gateway_usage_pending_records", "Usage records buffered in this process, not yet written to the store.",
    registry=REGISTRY,
)
USAGE_DROPPED = Counter(
    "gateway_usage_records_dropped_total",
    "Usage records dropped because the store stayed unavailable and the buffer was full.", registry=REGISTRY,
)
USAGE_FLUSH_FAILURES = Counter(
    "gateway_usage_flush_failures_total", "Usage flushes that stopped on a store error (retried).",
    registry=REGISTRY,
)
