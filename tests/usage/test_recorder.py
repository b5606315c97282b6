"""Buffer and flush: nothing on the request path, nothing lost on stop or during a store outage."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from usage_helpers import ANTHROPIC_USAGE, CHAT_USAGE, finished

from gateway import metrics
from gateway.accounting.pricing import PriceBook
from gateway.config import Settings
from gateway.stores import open_store
from gateway.stores.memory import MemoryStore
from gateway.usage import keys, query
from gateway.usage.record import RecordBuilder, UsageRecord
from gateway.usage.recorder import UsageRecorder


def _records(book: PriceBook, tenant: str, n: int) -> list[UsageRecord]:
    builder = RecordBuilder(book)
    out = []
    for i in range(n):
        if i % 3 == 2:
            ctx = finished(tenant=tenant, usage=CHAT_USAGE, answered_by="response-cache", cache_status="response-hit")
        elif i % 3 == 1:
            ctx = finished(tenant=tenant, protocol="anthropic_messages", provider="anthropic",
                           model="claude-sonnet-4-5", usage=ANTHROPIC_USAGE)
        else:
            ctx = finished(tenant=tenant, usage=CHAT_USAGE)
        ctx.request_id = f"gw-{i}"
        out.append(builder.build(ctx)[0])
    return out


async def test_add_only_buffers_until_flush(book: PriceBook) -> None:
    store = MemoryStore()
    recorder = UsageRecorder(store, flush_interval=60)
    for rec in _records(book, "acme", 4):
        recorder.add(rec)
    assert recorder.pending == 4
    assert await store.log_read(keys.records_key("acme"), 10) == []  # nothing written by add()
    assert await recorder.flush()
    assert recorder.pending == 0
    got = await query.records(store, "acme", 10)
    assert [r["request_id"] for r in got] == ["gw-3", "gw-2", "gw-1", "gw-0"]  # newest first
    assert (await query.totals(store, "acme"))["requests"] == 4


async def test_background_task_flushes_on_its_own(book: PriceBook) -> None:
    store = MemoryStore()
    recorder = UsageRecorder(store, flush_interval=0.02)
    await recorder.start()
    try:
        for rec in _records(book, "acme", 3):
            recorder.add(rec)
        for _ in range(100):
            if recorder.pending == 0:
                break
            await asyncio.sleep(0.01)
        assert len(await query.records(store, "acme", 10)) == 3
    finally:
        await recorder.stop()


async def test_stop_flushes_everything(book: PriceBook) -> None:
    store = MemoryStore()
    recorder = UsageRecorder(store, flush_interval=3600)  # the loop would never get to it
    await recorder.start()
    for rec in _records(book, "acme", 1200):  # more than one log chunk
        recorder.add(rec)
    assert await recorder.stop()
    assert len(await query.records(store, "acme", 5000)) == 1200
    assert (await query.totals(store, "acme"))["requests"] == 1200


async def test_store_outage_keeps_records_and_retries(book: PriceBook, own_redis) -> None:  # type: ignore[no-untyped-def]
    store = open_store(Settings(redis_url=own_redis.url, store_timeout=2.0))
    recorder = UsageRecorder(store, flush_interval=3600)
    failures = metrics.USAGE_FLUSH_FAILURES._value.get()
    try:
        own_redis.stop()  # killed, like a crash
        for rec in _records(book, "acme", 6):
            recorder.add(rec)
        assert not await recorder.flush()
        assert recorder.pending == 6
        assert metrics.USAGE_FLUSH_FAILURES._value.get() > failures
        for rec in _records(book, "acme", 3):  # more traffic during the outage
            recorder.add(rec)
        own_redis.start()  # same port, empty
        assert await recorder.stop(grace=10)  # waits out the breaker's cool-down, then writes
        assert recorder.pending == 0
        got = await query.totals(store, "acme")
        assert got["requests"] == 9
        assert len(await query.records(store, "acme", 100)) == 9
    finally:
        await store.close()


async def test_full_buffer_drops_oldest_and_counts(book: PriceBook, own_redis) -> None:  # type: ignore[no-untyped-def]
    store = open_store(Settings(redis_url=own_redis.url, store_timeout=2.0))
    recorder = UsageRecorder(store, flush_interval=3600, max_pending=5)
    dropped = metrics.USAGE_DROPPED._value.get()
    try:
        own_redis.stop()
        for rec in _records(book, "acme", 8):
            recorder.add(rec)
        assert not await recorder.flush()
        assert recorder.dropped == 3 and metrics.USAGE_DROPPED._value.get() == dropped + 3
        own_redis.start()
        assert await recorder.stop(grace=10)
        logged = await query.records(store, "acme", 100)
        assert [r["request_id"] for r in logged] == [f"gw-{i}" for i in range(7, 2, -1)]  # the newest five
        # Aggregates are never dropped: they merge per key while they wait.
        assert (await query.totals(store, "acme"))["requests"] == 8
    finally:
        await store.close()


async def test_records_survive_a_gateway_restart(book: PriceBook, redis_server) -> None:  # type: ignore[no-untyped-def]
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    first = open_store(Settings(redis_url=redis_server.url, store_timeout=2.0))
    recorder = UsageRecorder(first, flush_interval=3600)
    await recorder.start()
    for rec in _records(book, tenant, 5):
        recorder.add(rec)
    assert await recorder.stop()  # graceful shutdown
    await first.close()

    # A new process: new connections, a new recorder, nothing in memory.
    second = open_store(Settings(redis_url=redis_server.url, store_timeout=2.0))
    try:
        before = await query.totals(second, tenant)
        assert before["requests"] == 5 and before["hits"]["response"] == 1
        assert len(await query.records(second, tenant, 100)) == 5
        recorder2 = UsageRecorder(second, flush_interval=3600)
        for rec in _records(book, tenant, 2):
            recorder2.add(rec)
        assert await recorder2.stop()
        assert (await query.totals(second, tenant))["requests"] == 7  # added to, not replaced
    finally:
        await second.close()


async def test_two_replicas_add_into_the_same_totals(book: PriceBook, redis_server) -> None:  # type: ignore[no-untyped-def]
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    stores = [open_store(Settings(redis_url=redis_server.url, store_timeout=2.0)) for _ in range(2)]
    recorders = [UsageRecorder(s, flush_interval=0.01) for s in stores]
    try:
        for r in recorders:
            await r.start()
        recs = _records(book, tenant, 40)
        for i, rec in enumerate(recs):
            recorders[i % 2].add(rec)
            if i % 7 == 0:
                await asyncio.sleep(0)
        for r in recorders:
            assert await r.stop()
        got = await query.totals(stores[0], tenant)
        assert got["requests"] == 40
        assert got["cost_usd"] == pytest.approx(sum(r.cost_usd for r in recs))
    finally:
        for s in stores:
            await s.close()


def test_add_is_cheap(book: PriceBook) -> None:
    recorder = UsageRecorder(MemoryStore())
    rec = _records(book, "acme", 1)[0]
    t0 = time.perf_counter()
    for _ in range(10_000):
        recorder.add(rec)
    # Not a timing assertion of the product (the benchmark measures that): a guard against add()
    # ever growing I/O or serialization, which would cost milliseconds per call.
    assert time.perf_counter() - t0 < 1.0


def test_serialized_records_hold_their_own_size(book: PriceBook) -> None:
    """A buffered record costs its bytes, not the serialiser's output buffer (orjson's bytes kept
    ~16 KiB per ~1 KB record): at a few thousand requests a second the records waiting for the next
    flush set how far the heap grows."""
    import tracemalloc

    from gateway.usage.recorder import serialize

    records = _records(book, "acme", 300)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [serialize(rec) for rec in records]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 2 * sum(len(b) for b in kept) + 64 * len(kept)
    assert kept[0] == orjson_dumps(records[0])


def orjson_dumps(rec: UsageRecord) -> bytes:
    import orjson

    return orjson.dumps(rec, default=str)
