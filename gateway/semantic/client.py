"""Production adapter: qdrant-client's async client against a Qdrant server (`GATEWAY_QDRANT_URL`).

`:memory:` (or a `path:` URL) selects qdrant-client's local mode: the same API without a server,
which is what the tests use since no Qdrant server runs on these machines. Local mode ignores
payload indexes and scans in Python (≈190 ms a filtered search at 20k points), so it is for tests
only; a server honours the indexes, `tenant` as a tenant-optimised keyword index included.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import numpy as np
from qdrant_client import AsyncQdrantClient, models

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


def _must(must: MustFilter) -> models.Filter:
    return models.Filter(must=[
        models.FieldCondition(key="tenant", match=models.MatchValue(value=must.tenant)),
        models.FieldCondition(key="ctx", match=models.MatchValue(value=must.ctx)),
        models.FieldCondition(key="version", match=models.MatchValue(value=must.version)),
        models.FieldCondition(key="expires_at", range=models.Range(gt=must.now)),
    ])


class ClientStore(VectorStore):
    name = "qdrant"

    def __init__(self, url: str, collection: str, dim: int, timeout: float = 1.0,
                 api_key: str | None = None) -> None:
        super().__init__(collection, dim)
        self.url = url
        self.timeout = timeout
        self.local = url == ":memory:" or url.startswith("path:")
        if url == ":memory:":
            self.client = AsyncQdrantClient(location=":memory:")
        elif url.startswith("path:"):
            self.client = AsyncQdrantClient(path=url[len("path:"):])
        else:
            self.client = AsyncQdrantClient(url=url, api_key=api_key, timeout=max(1, int(timeout + 0.999)),
                                            check_compatibility=False)

    async def _call(self, op: Awaitable[T], limit: float | None = None) -> T:
        try:
            return await asyncio.wait_for(op, limit or self.timeout)
        except Exception as exc:  # connection refused, timeouts, HTTP errors: all a plain miss
            raise VectorStoreUnavailable(f"qdrant: {type(exc).__name__}: {exc}") from exc

    async def open(self) -> None:
        if not await self._call(self.client.collection_exists(self.collection), ADMIN_TIMEOUT):
            await self._call(self.client.create_collection(
                self.collection, vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE)),
                ADMIN_TIMEOUT)
        schemas: list[tuple[str, Any]] = [
            ("tenant", models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)),
            ("ctx", models.PayloadSchemaType.KEYWORD),
            ("version", models.PayloadSchemaType.KEYWORD),
            ("expires_at", models.PayloadSchemaType.FLOAT),
        ]
        if self.local:
            return  # local mode has no payload indexes (it says so in a warning on every call)
        for field, schema in schemas:
            await self._call(self.client.create_payload_index(self.collection, field, field_schema=schema),
                             ADMIN_TIMEOUT)

    async def _query(self, must: MustFilter, vector: list[float], limit: int, min_score: float) -> list[Candidate]:
        result = await self._call(self.client.query_points(
            self.collection, query=vector, query_filter=_must(must), limit=limit, with_payload=True,
            score_threshold=min_score))
        return [Candidate(str(p.id), float(p.score), str((p.payload or {}).get("question", "")), p.payload or {})
                for p in result.points]

    async def upsert(self, items: Sequence[tuple[Entry, np.ndarray]]) -> None:
        points = [models.PointStruct(id=e.id, vector=_as_list(v, self.dim), payload=e.payload()) for e, v in items]
        if points:
            await self._call(self.client.upsert(self.collection, points=points, wait=True))

    async def _delete(self, conditions: list[Any]) -> int:
        flt = models.Filter(must=conditions)
        n = (await self._call(self.client.count(self.collection, count_filter=flt, exact=True), ADMIN_TIMEOUT)).count
        if n:
            await self._call(self.client.delete(self.collection, points_selector=models.FilterSelector(filter=flt)),
                             ADMIN_TIMEOUT)
        return int(n)

    async def purge(self, tenant: str, version: str | None = None) -> int:
        conditions: list[Any] = [models.FieldCondition(key="tenant",
                                                       match=models.MatchValue(value=check_tenant(tenant)))]
        if version is not None:
            conditions.append(models.FieldCondition(key="version", match=models.MatchValue(value=version)))
        return await self._delete(conditions)

    async def delete(self, tenant: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        return await self._delete([models.HasIdCondition(has_id=list(ids)),
                                   models.FieldCondition(key="tenant",
                                                         match=models.MatchValue(value=check_tenant(tenant)))])

    async def purge_expired(self, now: float | None = None) -> int:
        cut = time.time() if now is None else now
        return await self._delete([models.FieldCondition(key="expires_at", range=models.Range(lte=cut))])

    async def count(self, tenant: str | None = None) -> int:
        flt = None if tenant is None else models.Filter(
            must=[models.FieldCondition(key="tenant", match=models.MatchValue(value=check_tenant(tenant)))])
        return int((await self._call(self.client.count(self.collection, count_filter=flt, exact=True),
                                     ADMIN_TIMEOUT)).count)

    async def close(self) -> None:
        try:
            await self.client.close()
        except Exception:
            pass
