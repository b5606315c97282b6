"""Buffered, batched writes of usage records and aggregates, off the request path.

`add()` is synchronous and O(1): the request path appends a record to a list and returns. A
background task `flush()`es every `flush_interval`: each batch becomes
- log appends (the tenant's capped log and the global one), in order, chunked;
- hash increments, summed per key before writing (a batch of a thousand records of one tenant
  and model is a handful of HINCRBY calls, whatever the traffic);
- index set members and template metadata.

Those operations wait in `pending` until the store accepts each one; an operation is removed
only after it succeeded, so a store outage loses nothing and a retry never adds twice (except
the rare call that timed out after Redis had applied it: at-least-once). Increments for the
same key merge while they wait, so an outage grows memory only by the records' log entries;
those are capped at `max_pending` (the oldest dropped first, counted in
`gateway_usage_records_dropped_total`). `stop()` flushes what is left (graceful shutdown).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

import orjson

from gateway import metrics
from gateway.stores.base import KVStore, StoreUnavailable
from gateway.usage import keys
from gateway.usage.record import UsageRecord

log = logging.getLogger("gateway.usage.recorder")

LOG_CHUNK = 500  # records per LPUSH: keeps each call well inside the store timeout
WRITE_CONCURRENCY = 16  # store calls in flight per flush (the Redis pool holds 64 connections)


def _json_default(value: object) -> object:
    return str(value)


def serialize(rec: UsageRecord) -> bytes:
    # orjson's bytes keep the capacity of its output buffer (16 KiB measured for a ~1 KB record); a
    # record waits here until the next flush, so at a few thousand requests a second the buffered ones
    # would hold ~16x their size in the heap, which it then keeps. The copy is the record's own size.
    return bytes(memoryview(orjson.dumps(rec, default=_json_default)))


class UsageRecorder:
    def __init__(self, store: KVStore, flush_interval: float = 0.5, max_records: int = 100_000,
                 max_pending: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.flush_interval = flush_interval
        self.max_records = max_records
        self.max_pending = max_pending
        self._clock = clock
        self._buffer: list[UsageRecord] = []
        self._logs: dict[str, deque[bytes]] = {}
        self._incr: dict[str, dict[str, int | float]] = {}
        self._ttl: dict[str, float | None] = {}
        self._sets: dict[str, set[str]] = {}
        self._meta: dict[str, dict[str, str]] = {}
        self._meta_written: dict[str, dict[str, str]] = {}  # skip rewriting unchanged metadata
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.dropped = 0

    # ---- the request path ---------------------------------------------------------------------
    def add(self, rec: UsageRecord) -> None:
        self._buffer.append(rec)

    @property
    def pending(self) -> int:
        """Records not yet durably logged (buffered + waiting for the store)."""
        return len(self._buffer) + sum(len(q) for k, q in self._logs.items() if k != keys.ALL_RECORDS)

    # ---- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        if self._task is None:
            self._stopping = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="usage-flush")

    async def stop(self, grace: float = 10.0) -> bool:
        """Stop the background task and flush everything left (retrying for `grace` seconds);
        False if the store kept refusing."""
        deadline = self._clock() + grace
        if self._task is not None:
            # Ask, never cancel: a task cancelled inside a redis-py call may swallow the
            # cancellation (reproduced with redis-py 8.1.0) and never end.
            self._stopping.set()
            done, _ = await asyncio.wait([self._task], timeout=grace)
            if not done:
                self._task.cancel()
            self._task = None
        while True:
            if await self.flush():
                return True
            if self._clock() >= deadline:
                log.error("usage records not written at shutdown: the store is unavailable",
                          extra={"pending": self.pending})
                return False
            await asyncio.sleep(min(0.2, max(0.0, deadline - self._clock())))

    async def _run(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.flush_interval)
            if self._stopping.is_set():
                return  # stop() does the last flush
            try:
                await self.flush()
            except Exception:  # a bug here must not stop accounting for good
                log.exception("usage flush failed")

    # ---- flushing -----------------------------------------------------------------------------
    async def flush(self) -> bool:
        """Write everything buffered; True when nothing is left pending."""
        async with self._lock:
            batch, self._buffer = self._buffer, []
            self._fold(batch)
            self._cap()
            ok = await self._write()
            metrics.USAGE_PENDING.set(self.pending)
            return ok

    def _fold(self, batch: list[UsageRecord]) -> None:
        # Records of one tenant, hour, model and template add into the same seven aggregate keys:
        # sum them per group first, so the per-key work is per group, not per record.
        groups: dict[tuple[str, int, str, str], dict[str, int | float]] = {}
        all_log = self._logs.setdefault(keys.ALL_RECORDS, deque())
        for rec in batch:
            data = serialize(rec)
            tenant = rec.tenant or "-"
            self._logs.setdefault(keys.records_key(tenant), deque()).append(data)
            all_log.append(data)
            template = keys.template_name(rec)
            group = (tenant, int(rec.ts // 3600), f"{rec.provider}/{rec.model}", template)
            keys.add_into(groups.setdefault(group, {}), keys.increments(rec))
            if rec.kind == "request" and rec.status < 400 and rec.model:
                self._meta[keys.template_meta_key(tenant, template)] = {"provider": rec.provider, "model": rec.model}
        for (tenant, slot, model, template), inc in groups.items():
            day, hour = keys.day_of(slot * 3600), keys.hour_of(slot * 3600)
            for key, ttl in (
                (keys.agg_key(tenant), None),
                (keys.agg_key(tenant, day=day), keys.DAY_TTL),
                (keys.agg_key(tenant, hour=hour), keys.HOUR_TTL),
                (keys.model_key(tenant, model), None),
                (keys.model_key(tenant, model, day), keys.DAY_TTL),
                (keys.template_key(tenant, template), None),
                (keys.template_key(tenant, template, day), keys.DAY_TTL),
            ):
                keys.add_into(self._incr.setdefault(key, {}), inc)
                self._ttl[key] = ttl
            self._sets.setdefault(keys.TENANTS, set()).add(tenant)
            self._sets.setdefault(keys.models_key(tenant), set()).add(model)
            self._sets.setdefault(keys.templates_key(tenant), set()).add(template)

    def _cap(self) -> None:
        # Only log entries grow with traffic while the store is down; keep the newest.
        for key, queue in self._logs.items():
            over = len(queue) - self.max_pending
            if over > 0:
                for _ in range(over):
                    queue.popleft()
                if key != keys.ALL_RECORDS:
                    self.dropped += over
                    metrics.USAGE_DROPPED.inc(over)

    async def _write(self) -> bool:
        # Aggregates, index sets and metadata first (what the totals and the report read), then the
        # logs. Keys are written concurrently (a few at a time): each call is one round trip.
        results = await self._each([self._write_incr(k) for k in list(self._incr)]
                                   + [self._write_set(k) for k in list(self._sets)]
                                   + [self._write_meta(k) for k in list(self._meta)])
        if results:
            results = await self._each([self._write_log(k) for k in list(self._logs)])
        if not results:
            metrics.USAGE_FLUSH_FAILURES.inc()
        return results

    async def _each(self, calls: list[Coroutine[Any, Any, None]]) -> bool:
        gate = asyncio.Semaphore(WRITE_CONCURRENCY)

        async def run(call: Coroutine[Any, Any, None]) -> None:
            async with gate:
                await call

        outcomes = await asyncio.gather(*(run(c) for c in calls), return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        for exc in failed:
            if not isinstance(exc, StoreUnavailable):
                raise exc
        if failed:
            log.warning("usage flush deferred: store unavailable",
                        extra={"error": str(failed[0]), "pending": self.pending})
        return not failed

    async def _write_incr(self, key: str) -> None:
        await self.store.hincr(key, self._incr[key], self._ttl.get(key))
        del self._incr[key]
        self._ttl.pop(key, None)

    async def _write_set(self, key: str) -> None:
        await self.store.sadd(key, *sorted(self._sets[key]))
        del self._sets[key]

    async def _write_meta(self, key: str) -> None:
        meta = self._meta[key]
        if self._meta_written.get(key) != meta:
            await self.store.hset(key, meta)
            self._meta_written[key] = meta
        del self._meta[key]

    async def _write_log(self, key: str) -> None:
        queue = self._logs[key]
        while queue:
            chunk = [queue[i] for i in range(min(LOG_CHUNK, len(queue)))]
            # LPUSH makes the last pushed the head: the log reads newest first.
            await self.store.log_append(key, chunk, self.max_records)
            for _ in chunk:
                queue.popleft()
        del self._logs[key]
