"""The usage stage: first in the pipeline, so its `after()` runs last, for every request.

`after()` builds the request's usage record, updates the Prometheus counters and hands the record
to the recorder's buffer. It awaits nothing: the store is written by the recorder's background
flush, never on the request's path. `start()` loads litellm's cost map off the event loop and
starts the flush task; `stop()` flushes what is left.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gateway import metrics
from gateway.accounting import pricing
from gateway.accounting.pricing import PriceBook
from gateway.context import RequestContext
from gateway.pipeline import Stage
from gateway.stores import open_store
from gateway.stores.base import KVStore
from gateway.usage.labels import model_label
from gateway.usage.record import RecordBuilder, UsageRecord, storage_record
from gateway.usage.recorder import UsageRecorder

# The background flush writes through its own Redis pool with a longer per-call timeout than the
# request path's `store_timeout` (0.1 s): a write that times out after Redis applied it is retried
# and counted twice, and nothing waits on these writes, so they trade fail-fast for exactness.
FLUSH_STORE_TIMEOUT = 2.0

# Label children of the counters every request touches (values bounded as `observe` says).
_COST, _CACHE_OVERHEAD = metrics.Children(metrics.COST), metrics.Children(metrics.CACHE_OVERHEAD)
_REQUESTS, _SAVED_COST = metrics.Children(metrics.REQUESTS), metrics.Children(metrics.SAVED_COST)
_TOKENS, _TTFT, _DURATION = (metrics.Children(metrics.TOKENS), metrics.Children(metrics.TTFT),
                             metrics.Children(metrics.DURATION))


class UsageStage(Stage):
    name = "usage"
    light = True  # pass-through requests are recorded too

    def __init__(self, settings: Any, store: KVStore, *, prices: PriceBook | None = None,
                 recorder: UsageRecorder | None = None, flush_store: KVStore | None = None,
                 enabled: bool = True) -> None:
        self.settings = settings
        self.prices = prices or PriceBook(settings)
        self._own_store: KVStore | None = None
        if flush_store is None and recorder is None and getattr(settings, "redis_url", None):
            flush_store = self._own_store = open_store(settings.model_copy(
                update={"store_timeout": max(settings.store_timeout, FLUSH_STORE_TIMEOUT)}))
        usage_cfg = getattr(settings, "usage", None)
        self.recorder = recorder or UsageRecorder(
            flush_store or store,
            flush_interval=getattr(usage_cfg, "flush_interval", 0.5),
            max_records=getattr(usage_cfg, "max_records", 100_000),
        )
        self.builder = RecordBuilder(self.prices, settings)
        self.enabled = enabled  # off: no record, no metric (the benchmark's baseline)
        pricing.install(self.prices)

    async def start(self) -> None:
        # a file read and parse (~30 ms): never on the loop.
        await asyncio.to_thread(lambda: self.prices.cost_map)
        await self.recorder.start()

    async def stop(self) -> None:
        await self.recorder.stop()
        if self._own_store is not None:
            await self._own_store.close()

    async def after(self, ctx: RequestContext) -> None:
        if self.enabled:
            self.record(ctx)

    def record(self, ctx: RequestContext) -> UsageRecord:
        rec, money = self.builder.build(ctx)
        observe(rec, money.read_saving_usd, money.write_premium_usd)
        self.recorder.add(rec)
        return rec

    def record_storage(self, tenant: str, model: str, tokens: int, hours: float, *, provider: str = "gemini",
                       cache_name: str | None = None, request_id: str = "") -> float:
        """Account a provider-cache storage charge made outside a request's answer (a Gemini
        CachedContent created or extended): returns its cost. Inside a request, a stage may
        instead add `pricing.storage_cost(...)` to `ctx.record["storage_cost_usd"]`."""
        cost = self.prices.storage_cost(tokens, hours, model, provider)
        rec = storage_record(tenant, provider, model, cost, tokens=tokens, hours=hours, cache_name=cache_name,
                             request_id=request_id)
        observe(rec, 0.0, 0.0)
        self.recorder.add(rec)
        return cost


def observe(rec: UsageRecord, read_saving: float, write_premium: float) -> None:
    """Prometheus counters of one record (label values bounded by tenants, providers and models)."""
    tenant, provider = rec.tenant or "-", rec.provider or "-"
    if rec.cost_usd:
        _COST[tenant, provider].inc(rec.cost_usd)
    if rec.kind != "request":
        if rec.storage_cost_usd:
            _CACHE_OVERHEAD[tenant, provider].inc(rec.storage_cost_usd)
        return
    model = model_label(rec.model, rec.price_source, rec.status)
    _REQUESTS[tenant, provider, model, rec.gateway_cache or "-"].inc()
    if rec.is_hit:
        # Tokens counted are the ones that went upstream; a hit's tokens show as saved cost.
        if rec.saved_usd > 0:
            _SAVED_COST[tenant, rec.saved_layer].inc(rec.saved_usd)
    else:
        if rec.input_tokens:
            _TOKENS[tenant, provider, "input"].inc(rec.input_tokens)
        if rec.cached_input_tokens:
            _TOKENS[tenant, provider, "cached_input"].inc(rec.cached_input_tokens)
            _TOKENS[tenant, provider, "cache_read"].inc(rec.cached_input_tokens)
        if rec.cache_creation_input_tokens:
            _TOKENS[tenant, provider, "cache_write"].inc(rec.cache_creation_input_tokens)
        if rec.output_tokens:
            _TOKENS[tenant, provider, "output"].inc(rec.output_tokens)
        if read_saving > 0:
            _SAVED_COST[tenant, "provider"].inc(read_saving)
        premium = write_premium + rec.storage_cost_usd
        if premium > 0:
            _CACHE_OVERHEAD[tenant, provider].inc(premium)
    if rec.time_to_first_token_s is not None:
        _TTFT[provider,].observe(rec.time_to_first_token_s)
    if rec.latency_s is not None:
        _DURATION[provider, rec.gateway_cache or "-"].observe(rec.latency_s)
