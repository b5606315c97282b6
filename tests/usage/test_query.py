"""Totals equal the sum of records, on the embedded store and on Redis; windows and breakdowns."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

import pytest
from usage_helpers import ANTHROPIC_USAGE, CHAT_USAGE, finished

from gateway.accounting.pricing import PriceBook
from gateway.config import Settings
from gateway.stores import KVStore, open_store
from gateway.usage import query
from gateway.usage.record import RecordBuilder, UsageRecord, storage_record
from gateway.usage.recorder import UsageRecorder

GEMINI_USAGE = {"promptTokenCount": 5210, "cachedContentTokenCount": 5000, "candidatesTokenCount": 40,
                "thoughtsTokenCount": 120, "totalTokenCount": 5370}
DEEPSEEK_USAGE = {"prompt_tokens": 1500, "completion_tokens": 900, "total_tokens": 2400,
                  "prompt_cache_hit_tokens": 1280, "prompt_cache_miss_tokens": 220}
SUMMED = ("input_tokens", "cached_input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
          "output_tokens", "total_tokens", "cost_usd", "cost_without_cache_usd", "saved_usd", "storage_cost_usd")


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[KVStore]:
    if request.param == "memory":
        kv = open_store(Settings())
    else:
        kv = open_store(Settings(redis_url=request.getfixturevalue("redis_server").url, store_timeout=2.0))
    try:
        yield kv
    finally:
        await kv.close()


def mixed(book: PriceBook, tenant: str, now: float) -> list[UsageRecord]:
    """Every kind of record: each protocol, hits of each layer, errors, templates, storage."""
    b = RecordBuilder(book)
    ctxs = [
        finished(tenant=tenant, usage=CHAT_USAGE, template=("faq", "1")),
        finished(tenant=tenant, usage=CHAT_USAGE, template=("faq", "1"), answered_by="response-cache",
                 cache_status="response-hit"),
        finished(tenant=tenant, usage=CHAT_USAGE, answered_by="semantic-cache", cache_status="semantic-hit"),
        finished(tenant=tenant, usage=CHAT_USAGE, answered_by="single-flight"),
        finished(tenant=tenant, protocol="anthropic_messages", provider="anthropic", model="claude-sonnet-4-5",
                 usage=ANTHROPIC_USAGE, template=("summarize", "2"), stream=True),
        finished(tenant=tenant, protocol="gemini", provider="gemini", model="gemini-2.5-flash", usage=GEMINI_USAGE,
                 record={"storage_cost_usd": 0.004}),
        finished(tenant=tenant, provider="deepseek", model="deepseek-chat", usage=DEEPSEEK_USAGE,
                 cache_status="bypass"),
        finished(tenant=tenant, status=429),
        finished(tenant=tenant, protocol="openai_responses", usage={
            "input_tokens": 300, "output_tokens": 20, "total_tokens": 320,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}}),
    ]
    out = []
    for i, ctx in enumerate(ctxs):
        ctx.request_id = f"gw-{i}"
        ctx.created_at = now - 60 * i
        out.append(b.build(ctx)[0])
    out.append(storage_record(tenant, "gemini", "gemini-2.5-flash", 0.01, tokens=5000, hours=2, ts=now - 5))
    return out


async def _write(store: KVStore, recs: list[UsageRecord]) -> None:
    recorder = UsageRecorder(store, flush_interval=3600)
    for rec in recs:
        recorder.add(rec)
    assert await recorder.stop()


async def test_totals_equal_the_sum_of_records(book: PriceBook, store: KVStore) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    await _write(store, mixed(book, tenant, time.time()))
    totals = await query.totals(store, tenant)
    logged = await query.records(store, tenant, 1000)
    assert len(logged) == 10
    requests = [r for r in logged if r["kind"] == "request"]
    assert totals["requests"] == len(requests) == 9
    for name in SUMMED:
        assert totals[name] == pytest.approx(sum(r[name] for r in logged), abs=1e-12), name
    assert totals["hits"] == {"response": 1, "semantic": 1, "single_flight": 1, "provider": 4}
    assert (totals["misses"], totals["bypass"], totals["errors"]) == (5, 1, 1)
    assert totals["saved_by_layer"]["response"] == pytest.approx(
        sum(r["saved_usd"] for r in logged if r["saved_layer"] == "response"))
    assert totals["saved_by_layer"]["provider"] == pytest.approx(
        sum(r["saved_usd"] for r in logged if r["saved_layer"] == "provider"))
    # Gateway hits paid nothing; their original tokens are in the totals and split out of "upstream".
    upstream = [r for r in requests if r["saved_layer"] not in ("response", "semantic", "single-flight")]
    assert totals["upstream"]["input_tokens"] == sum(r["input_tokens"] for r in upstream)
    assert totals["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in upstream) + 0.01)


async def test_breakdowns_add_up_to_the_totals(book: PriceBook, store: KVStore) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    await _write(store, mixed(book, tenant, time.time()))
    totals = await query.totals(store, tenant)
    for by in ("template", "model"):
        parts = await query.breakdown(store, tenant, by)
        assert sum(p["requests"] for p in parts.values()) == totals["requests"]
        assert sum(p["cost_usd"] for p in parts.values()) == pytest.approx(totals["cost_usd"])
    templates = await query.breakdown(store, tenant, "template")
    untemplated = {t for t in templates if t.startswith("-:")}
    assert set(templates) - untemplated == {"faq@1", "summarize@2"}
    # requests without a template get one row per provider/model, never one row mixing models
    assert untemplated and all(t.count("/") == 1 for t in untemplated)
    for name in untemplated:
        meta = await query.template_meta(store, tenant, name)
        assert name == f"-:{meta['provider']}/{meta['model']}"
    assert templates["faq@1"]["hits_response"] == 1
    assert await query.template_meta(store, tenant, "summarize@2") == {"provider": "anthropic",
                                                                       "model": "claude-sonnet-4-5"}
    models = await query.breakdown(store, tenant, "model")
    assert "deepseek/deepseek-chat" in models and "anthropic/claude-sonnet-4-5" in models


async def test_since_windows(book: PriceBook, store: KVStore) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    now = time.time()
    old = mixed(book, tenant, now - 5 * 86400)
    recent = mixed(book, tenant, now)
    await _write(store, old + recent)
    assert (await query.totals(store, tenant))["requests"] == 18
    assert (await query.totals(store, tenant, since="1d", now=now))["requests"] == 9
    assert (await query.totals(store, tenant, since="7d", now=now))["requests"] == 18
    series = await query.series(store, tenant, since="24h", now=now)
    assert len(series) in (24, 25) and sum(b["requests"] for b in series) == 9
    daily = await query.series(store, tenant, since="7d", now=now)
    assert sum(b["requests"] for b in daily) == 18


async def test_all_tenants_and_isolation(book: PriceBook) -> None:
    store = open_store(Settings())
    now = time.time()
    await _write(store, mixed(book, "a", now) + mixed(book, "b", now)[:3])
    everyone = await query.totals(store)
    assert everyone["requests"] == 12 and set(everyone["tenants"]) == {"a", "b"}
    assert (await query.totals(store, "b"))["requests"] == 3
    assert all(r["tenant"] == "b" for r in await query.records(store, "b", 100))
    assert len(await query.records(store, None, 100)) == 13


def test_parse_since() -> None:
    assert query.parse_since("7d") == 7 * 86400 and query.parse_since("all") is None
    with pytest.raises(ValueError):
        query.parse_since("yesterday")
