"""The usage stage in a pipeline: a record for every request (hits included) and the metrics."""

from __future__ import annotations

import uuid

import pytest
from prometheus_client import generate_latest
from usage_helpers import ANTHROPIC_USAGE, CHAT_USAGE, finished

from gateway.accounting.pricing import PriceBook
from gateway.answer import Answer
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.metrics import REGISTRY
from gateway.pipeline import Hit, Pipeline, Stage
from gateway.stores.memory import MemoryStore
from gateway.usage import query
from gateway.usage.stage import UsageStage


def sample(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return value or 0.0


class CacheHitStage(Stage):
    """A stage after usage that answers from a cache (stands in for the position of one)."""

    name = "test-cache"

    def __init__(self, answer: Answer) -> None:
        self.answer = answer

    async def before(self, ctx: RequestContext) -> Hit | None:
        return Hit(status="response-hit", answer=self.answer)


async def test_metrics_of_a_miss(book: PriceBook) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    stage = UsageStage(Settings(), MemoryStore(), prices=book)
    await stage.after(finished(tenant=tenant, protocol="anthropic_messages", provider="anthropic",
                               model="claude-sonnet-4-5", usage=ANTHROPIC_USAGE))
    assert sample("gateway_requests_total", tenant=tenant, provider="anthropic", model="claude-sonnet-4-5",
                  cache="miss") == 1
    assert sample("gateway_tokens_total", tenant=tenant, provider="anthropic", kind="input") == 2098
    assert sample("gateway_tokens_total", tenant=tenant, provider="anthropic", kind="cached_input") == 1800
    assert sample("gateway_tokens_total", tenant=tenant, provider="anthropic", kind="cache_read") == 1800
    assert sample("gateway_tokens_total", tenant=tenant, provider="anthropic", kind="cache_write") == 248
    assert sample("gateway_tokens_total", tenant=tenant, provider="anthropic", kind="output") == 503
    assert sample("gateway_cost_usd_total", tenant=tenant, provider="anthropic") == pytest.approx(0.00939)
    assert sample("gateway_saved_cost_usd_total", tenant=tenant, layer="provider") == pytest.approx(1800 * 2.7e-6)
    assert sample("gateway_provider_cache_overhead_usd_total", tenant=tenant, provider="anthropic") == pytest.approx(
        148 * 0.75e-6 + 100 * 3e-6)
    text = generate_latest(REGISTRY).decode()
    for name in ("gateway_time_to_first_token_seconds_bucket", "gateway_request_duration_seconds_bucket",
                 "gateway_usage_pending_records", "gateway_vllm_prefix_cache_hit_rate"):
        assert name in text
    assert f'gateway_requests_total{{cache="miss",model="claude-sonnet-4-5",provider="anthropic",tenant="{tenant}"}}' \
        in text


async def test_every_request_is_recorded_hits_included(book: PriceBook) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    store = MemoryStore()
    usage = UsageStage(Settings(), store, prices=book)
    cached = Answer(text="cached", model="gpt-4o", provider="openai", usage_raw=CHAT_USAGE)
    pipeline = Pipeline([usage, CacheHitStage(cached)])
    await pipeline.start()

    ctx = finished(tenant=tenant, usage=None)
    hit = await pipeline.before(ctx)
    assert hit is not None
    # What respond_hit does with a hit before the post-stages run.
    ctx.cache_status, ctx.answered_by, ctx.answer = hit.status, "response-cache", hit.answer
    await pipeline.after(ctx)

    miss = finished(tenant=tenant, usage=CHAT_USAGE)
    miss.ran = [usage]  # as if a later stage had let it through
    await pipeline.after(miss)
    await pipeline.stop()  # the graceful shutdown flushes

    totals = await query.totals(store, tenant)
    assert totals["requests"] == 2 and totals["hits"]["response"] == 1
    assert totals["saved_by_layer"]["response"] == pytest.approx(0.005615)
    assert sample("gateway_saved_cost_usd_total", tenant=tenant, layer="response") == pytest.approx(0.005615)
    # Tokens in Prometheus are what went upstream: the hit's tokens are not counted again.
    assert sample("gateway_tokens_total", tenant=tenant, provider="openai", kind="input") == 2006


async def test_disabled_stage_records_nothing(book: PriceBook) -> None:
    store = MemoryStore()
    stage = UsageStage(Settings(), store, prices=book, enabled=False)
    await stage.after(finished(tenant="off", usage=CHAT_USAGE))
    await stage.stop()
    assert (await query.totals(store, "off"))["requests"] == 0


async def test_storage_charge_outside_a_request(book: PriceBook) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    store = MemoryStore()
    stage = UsageStage(Settings(), store, prices=book)
    cost = stage.record_storage(tenant, "gemini-2.5-flash", tokens=100_000, hours=1.5, cache_name="cachedContents/x")
    assert cost == pytest.approx(100_000 * 1.5 * 1e-6)
    await stage.stop()
    totals = await query.totals(store, tenant)
    assert totals["requests"] == 0 and totals["cost_usd"] == pytest.approx(cost)
    assert totals["saved_by_layer"]["provider"] == pytest.approx(-cost)
    assert sample("gateway_cost_usd_total", tenant=tenant, provider="gemini") == pytest.approx(cost)


async def test_stage_on_redis_survives_a_restart(book: PriceBook, redis_server) -> None:  # type: ignore[no-untyped-def]
    from gateway.stores import open_store

    tenant = f"t-{uuid.uuid4().hex[:8]}"
    settings = Settings(redis_url=redis_server.url)
    for run in range(2):  # two gateway lifetimes: start, serve, graceful stop
        shared = open_store(settings)
        stage = UsageStage(settings, shared, prices=book)
        assert stage.recorder.store is not shared  # the flush has its own, patient, pool
        await stage.start()
        await stage.after(finished(tenant=tenant, usage=CHAT_USAGE, request_id=f"gw-run{run}"))
        await stage.stop()
        await shared.close()
    reader = open_store(settings)
    try:
        assert (await query.totals(reader, tenant))["requests"] == 2
        assert [r["request_id"] for r in await query.records(reader, tenant, 10)] == ["gw-run1", "gw-run0"]
    finally:
        await reader.close()
