"""The embedded default: qdrant-edge-py, Qdrant's own engine in-process, one shard per collection.

qdrant-edge-py is synchronous and a shard has one owner. Every call goes through one dedicated
worker thread, which serialises access to the shard and keeps the event loop free: a filtered
top-5 over tens of thousands of points takes a fraction of a millisecond with payload indexes
(see docs/semantic-cache.md for the measured cost of the thread hop), but upserts write the WAL
and purges scan, and neither may stall other requests.

Searches that are waiting when the worker is free go to it together, as one `query_batch` (one
thread hop and one planned pass for all of them instead of one each): the embedder hands out its
vectors a micro-batch at a time, so concurrent lookups reach the store in bursts. Each search keeps
its own filter, built from its own scope, and gets its own result list.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import qdrant_edge as qe

from gateway.semantic.batching import collect
from gateway.semantic.store import (
    ADMIN_TIMEOUT,
    Candidate,
    Entry,
    MustFilter,
    VectorStore,
    VectorStoreUnavailable,
    _as_list,
    check_tenant,
)

T = TypeVar("T")


def _must(must: MustFilter) -> qe.Filter:
    # One condition: the scope key stands for tenant, context and version. Expiry is checked on the
    # results in Python (`Scope.admits`, which re-checks everything) rather than as a second
    # condition that would double the search's cost; `_query` over-fetches so that expired points,
    # until the next sweep removes them, do not push live ones out of the top k.
    return qe.Filter(must=[qe.FieldCondition(key="scope", match=qe.MatchValue(must.key))])


# Extra candidates fetched beyond the limit, room for expired points not yet swept.
EXPIRED_SLACK = 5
# Searches sent to the worker in one `query_batch` at most.
MAX_SEARCH_BATCH = 32
# The shard's own search pool reads segments in parallel, one thread per CPU by default (8 here, on
# 2 cores): a scope's few thousand points are one segment's work, so the other threads only add
# wake-ups. Measured on 100k points in 50 scopes: 0.88 → 0.72 ms of CPU a search, the same results.
# Concurrent lookups still search in parallel with the rest of the stage (embedding, checks).
SEARCH_THREADS = 1


@dataclass(slots=True)
class _Search:
    request: qe.QueryRequest
    future: asyncio.Future[list[Candidate]] = dataclasses.field(repr=False)


def _candidates(points: Sequence[Any]) -> list[Candidate]:
    return [Candidate(str(p.id), float(p.score), str((p.payload or {}).get("question", "")), p.payload or {})
            for p in points]


def run(shard_of: Callable[[], qe.EdgeShard], requests: list[qe.QueryRequest]) -> list[list[Candidate]]:
    """The searches of one batch, in the worker thread: each request was built by `EdgeStore._query`
    from its own scope's filter; one result list per request, in order."""
    shard = shard_of()
    if len(requests) == 1:
        return [_candidates(shard.query(requests[0]))]
    return [_candidates(points) for points in shard.query_batch(qe.QueryBatchRequest(queries=requests))]


class EdgeStore(VectorStore):
    name = "qdrant-edge"

    def __init__(self, path: Path, collection: str, dim: int, timeout: float = 1.0) -> None:
        super().__init__(collection, dim)
        self.path = Path(path) / collection
        self.timeout = timeout
        self._shard: qe.EdgeShard | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qdrant-edge")
        self._searches: asyncio.Queue[_Search] | None = None
        self._batcher: asyncio.Task[None] | None = None
        self.search_batches = 0  # counters for the benchmark and tests
        self.searches = 0

    async def _call(self, fn: Callable[[], T], limit: float | None = None) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(loop.run_in_executor(self._pool, fn), limit or self.timeout)
        except (TimeoutError, RuntimeError, OSError, ValueError) as exc:
            raise VectorStoreUnavailable(f"qdrant-edge: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:  # the extension raises its own error types
            raise VectorStoreUnavailable(f"qdrant-edge: {type(exc).__name__}: {exc}") from exc

    def _open_sync(self) -> None:
        if self._shard is not None:
            return
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=self.dim, distance=qe.Distance.Cosine),
                               max_search_threads=SEARCH_THREADS)
        if (self.path / "edge_config.json").exists():
            try:
                shard = qe.EdgeShard.load(str(self.path), config)  # the same vectors; the pool's size updated
            except Exception:  # a shard made with other settings: opened as it is
                shard = qe.EdgeShard.load(str(self.path))
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            shard = qe.EdgeShard.create(str(self.path), config)
        indexed = set(shard.info().payload_schema)
        for field, schema in (
            ("tenant", qe.KeywordIndexParams(is_tenant=True)),
            ("ctx", qe.PayloadSchemaType.Keyword),
            ("version", qe.PayloadSchemaType.Keyword),
            ("expires_at", qe.PayloadSchemaType.Float),
            ("scope", qe.KeywordIndexParams(is_tenant=True)),
        ):
            if field not in indexed:
                shard.update(qe.UpdateOperation.create_field_index(field, schema))
        self._shard = shard

    def _shard_or_fail(self) -> qe.EdgeShard:
        if self._shard is None:
            raise RuntimeError("the semantic store is not open")
        return self._shard

    async def open(self) -> None:
        await self._call(self._open_sync, ADMIN_TIMEOUT)

    async def _query(self, must: MustFilter, vector: list[float], limit: int, min_score: float) -> list[Candidate]:
        request = qe.QueryRequest(limit=limit + EXPIRED_SLACK, query=qe.Query.Nearest(vector), filter=_must(must),
                                  with_payload=True, score_threshold=min_score)
        if self._batcher is None or self._batcher.done() or self._searches is None:
            self._searches = asyncio.Queue()
            self._batcher = asyncio.create_task(self._search_loop(), name="qdrant-edge-search")
        future: asyncio.Future[list[Candidate]] = asyncio.get_running_loop().create_future()
        self._searches.put_nowait(_Search(request, future))
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except TimeoutError as exc:
            raise VectorStoreUnavailable(f"qdrant-edge: TimeoutError: {exc}") from exc

    async def _search_loop(self) -> None:
        """Whatever searches are queued when the worker is free, as one batch (no waiting window:
        a search alone goes at once)."""
        assert self._searches is not None
        while True:
            batch = [s for s in await collect(self._searches, 0.0, MAX_SEARCH_BATCH) if not s.future.done()]
            if not batch:
                continue
            requests = [s.request for s in batch]
            try:
                results = await asyncio.get_running_loop().run_in_executor(self._pool, run, self._shard_or_fail,
                                                                           requests)
            except Exception as exc:  # the extension raises its own error types: every search of it fails
                error = VectorStoreUnavailable(f"qdrant-edge: {type(exc).__name__}: {exc}")
                for s in batch:
                    if not s.future.done():
                        s.future.set_exception(error)
                continue
            self.search_batches += 1
            self.searches += len(batch)
            for s, found in zip(batch, results, strict=True):
                if not s.future.done():
                    s.future.set_result(found)

    async def upsert(self, items: Sequence[tuple[Entry, np.ndarray]]) -> None:
        points = [qe.Point(e.id, _as_list(v, self.dim), e.payload()) for e, v in items]
        if points:
            await self._call(lambda: self._shard_or_fail().update(qe.UpdateOperation.upsert_points(points)))

    async def _delete(self, conditions: list[Any]) -> int:
        flt = qe.Filter(must=conditions)

        def run() -> int:
            shard = self._shard_or_fail()
            n = shard.count(qe.CountRequest(exact=True, filter=flt))
            if n:
                shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
            return int(n)

        return await self._call(run, ADMIN_TIMEOUT)

    async def purge(self, tenant: str, version: str | None = None) -> int:
        conditions: list[Any] = [qe.FieldCondition(key="tenant", match=qe.MatchValue(check_tenant(tenant)))]
        if version is not None:
            conditions.append(qe.FieldCondition(key="version", match=qe.MatchValue(version)))
        return await self._delete(conditions)

    async def delete(self, tenant: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        return await self._delete([qe.HasIdCondition(set(ids)),
                                   qe.FieldCondition(key="tenant", match=qe.MatchValue(check_tenant(tenant)))])

    async def purge_expired(self, now: float | None = None) -> int:
        cut = time.time() if now is None else now
        return await self._delete([qe.FieldCondition(key="expires_at", range=qe.RangeFloat(lte=cut))])

    async def count(self, tenant: str | None = None) -> int:
        flt = None if tenant is None else qe.Filter(
            must=[qe.FieldCondition(key="tenant", match=qe.MatchValue(check_tenant(tenant)))])
        return await self._call(lambda: int(self._shard_or_fail().count(qe.CountRequest(exact=True, filter=flt))),
                                ADMIN_TIMEOUT)

    async def close(self) -> None:
        if self._batcher is not None:
            self._batcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._batcher
            self._batcher = None
        shard, self._shard = self._shard, None
        if shard is not None:
            def shut() -> None:
                shard.flush()
                shard.close()

            try:
                await asyncio.get_running_loop().run_in_executor(self._pool, shut)
            except Exception:
                pass
        self._pool.shutdown(wait=False)
