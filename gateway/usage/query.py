"""Reading the usage data back: totals, records, per-template/model breakdowns, time series.

Everything reads the aggregates the recorder keeps (keys.py), never scans records, so a call costs
a few store reads whatever the traffic. `since` ("7d", "24h", "90m"; None or "all" = all time)
selects hourly buckets up to two days back and daily buckets beyond (a bucket counts whole once
it overlaps the window).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from gateway.policy.models import parse_duration
from gateway.stores.base import KVStore
from gateway.usage import keys

HOURLY_UP_TO = 2 * 86400.0
Agg = dict[str, int | float]


def parse_since(since: str | float | None) -> float | None:
    """Seconds back from now, or None for all time."""
    if since is None or since == "" or since == "all":
        return None
    return parse_duration(since)


def _buckets(start: float, now: float, hourly: bool) -> list[str]:
    step = timedelta(hours=1) if hourly else timedelta(days=1)
    fmt = "%Y-%m-%dT%H" if hourly else "%Y-%m-%d"
    t = datetime.fromtimestamp(start, UTC)
    t = t.replace(minute=0, second=0, microsecond=0) if hourly else t.replace(hour=0, minute=0, second=0,
                                                                               microsecond=0)
    end = datetime.fromtimestamp(now, UTC)
    out = []
    while t <= end:
        out.append(t.strftime(fmt))
        t += step
    return out


async def tenants(store: KVStore) -> list[str]:
    return sorted(await store.smembers(keys.TENANTS))


async def _read(store: KVStore, key: str) -> Agg:
    return keys.parse_hash(await store.hgetall(key))


async def _sum(store: KVStore, key_list: list[str]) -> Agg:
    total = keys.parse_hash({})
    for key in key_list:
        keys.add_into(total, await _read(store, key))
    return total


async def tenant_agg(store: KVStore, tenant: str, since: float | None = None, now: float | None = None) -> Agg:
    if since is None:
        return await _read(store, keys.agg_key(tenant))
    now = time.time() if now is None else now
    if since <= HOURLY_UP_TO:
        return await _sum(store, [keys.agg_key(tenant, hour=h) for h in _buckets(now - since, now, True)])
    return await _sum(store, [keys.agg_key(tenant, day=d) for d in _buckets(now - since, now, False)])


def _rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def shape(agg: Agg) -> dict[str, Any]:
    """Aggregate counters → the contract's `/admin/usage` answer (plus the extras that explain it)."""
    requests = int(agg["requests"])
    upstream = int(agg["upstream_requests"])
    return {
        "requests": requests,
        "input_tokens": int(agg["input_tokens"]),
        "cached_input_tokens": int(agg["cached_input_tokens"]),
        "cache_creation_input_tokens": int(agg["cache_creation_input_tokens"]),
        "cache_read_input_tokens": int(agg["cache_read_input_tokens"]),
        "output_tokens": int(agg["output_tokens"]),
        "reasoning_tokens": int(agg["reasoning_tokens"]),
        "total_tokens": int(agg["total_tokens"]),
        "cost_usd": float(agg["cost_usd"]),
        "cost_without_cache_usd": float(agg["cost_without_cache_usd"]),
        "saved_usd": float(agg["saved_usd"]),
        "storage_cost_usd": float(agg["storage_cost_usd"]),
        "hits": {
            "response": int(agg["hits_response"]),
            "semantic": int(agg["hits_semantic"]),
            "single_flight": int(agg["hits_single_flight"]),
            "provider": int(agg["provider_reads"]),
        },
        "hit_rate": {
            "response": _rate(agg["hits_response"], requests),
            "semantic": _rate(agg["hits_semantic"], requests),
            "single_flight": _rate(agg["hits_single_flight"], requests),
            # Provider-cache hits are counted among the requests that reached the vendor.
            "provider": _rate(agg["provider_reads"], upstream),
            # ... and by tokens: the share of upstream prompt tokens read from a provider cache.
            "provider_tokens": _rate(agg["cached_input_tokens"] - agg["hit_cached_input_tokens"],
                                     agg["input_tokens"] - agg["hit_input_tokens"]),
        },
        "saved_by_layer": {
            "response": float(agg["saved_response_usd"]),
            "semantic": float(agg["saved_semantic_usd"]),
            "single_flight": float(agg["saved_single_flight_usd"]),
            "provider": float(agg["saved_provider_usd"]),
        },
        "misses": int(agg["misses"]),
        "bypass": int(agg["bypass"]),
        "errors": int(agg["errors"]),
        "upstream": {
            "requests": upstream,
            "input_tokens": int(agg["input_tokens"] - agg["hit_input_tokens"]),
            "cached_input_tokens": int(agg["cached_input_tokens"] - agg["hit_cached_input_tokens"]),
            "output_tokens": int(agg["output_tokens"] - agg["hit_output_tokens"]),
            "provider_cache_reads": int(agg["provider_reads"]),
            "provider_cache_writes": int(agg["provider_writes"]),
        },
        "mean_latency_s": _rate(agg["latency_s_sum"], requests),
        "mean_ttft_s": _rate(agg["ttft_s_sum"], agg["ttft_count"]),
    }


async def totals(store: KVStore, tenant: str | None = None, since: str | float | None = None,
                 now: float | None = None) -> dict[str, Any]:
    """`GET /admin/usage`: one tenant's totals, or every tenant's summed (with a per-tenant map)."""
    seconds = parse_since(since)
    if tenant is not None:
        out = shape(await tenant_agg(store, tenant, seconds, now))
        out["tenant"] = tenant
    else:
        total = keys.parse_hash({})
        per: dict[str, Any] = {}
        for name in await tenants(store):
            agg = await tenant_agg(store, name, seconds, now)
            keys.add_into(total, agg)
            per[name] = shape(agg)
        out = shape(total)
        out["tenant"] = None
        out["tenants"] = per
    out["since"] = since if seconds is not None else None
    return out


async def records(store: KVStore, tenant: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """`GET /admin/usage/records`: the newest records, newest first."""
    raw = await store.log_read(keys.records_key(tenant), max(0, limit))
    return [orjson.loads(r) for r in raw]


async def breakdown(store: KVStore, tenant: str, by: str, since: str | float | None = None,
                    now: float | None = None) -> dict[str, Agg]:
    """Aggregates per template (`by="template"`) or per provider/model (`by="model"`)."""
    seconds = parse_since(since)
    index = keys.templates_key(tenant) if by == "template" else keys.models_key(tenant)
    key_of = keys.template_key if by == "template" else keys.model_key
    out: dict[str, Agg] = {}
    now = time.time() if now is None else now
    for name in sorted(await store.smembers(index)):
        if seconds is None:
            out[name] = await _read(store, key_of(tenant, name))
        else:
            out[name] = await _sum(store, [key_of(tenant, name, d) for d in _buckets(now - seconds, now, False)])
    return {k: v for k, v in out.items() if v["requests"] or v["storage_events"]}


async def template_meta(store: KVStore, tenant: str, template: str) -> dict[str, str]:
    return await store.hgetall(keys.template_meta_key(tenant, template))


async def series(store: KVStore, tenant: str | None, since: str | float | None = "7d",
                 now: float | None = None) -> list[dict[str, Any]]:
    """Per-bucket aggregates (hourly up to two days back, else daily), oldest first."""
    now = time.time() if now is None else now
    seconds = parse_since(since) or 30 * 86400.0
    hourly = seconds <= HOURLY_UP_TO
    names = [tenant] if tenant is not None else await tenants(store)
    out = []
    for bucket in _buckets(now - seconds, now, hourly):
        agg = keys.parse_hash({})
        for name in names:
            key = keys.agg_key(name, hour=bucket) if hourly else keys.agg_key(name, day=bucket)
            keys.add_into(agg, await _read(store, key))
        out.append({"bucket": bucket, **agg})
    return out
