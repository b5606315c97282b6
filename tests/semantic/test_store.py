"""Both vector-store adapters against Qdrant's own engines: qdrant-edge-py (embedded) and
qdrant-client's local mode. The tenant filter is structural: tests prove no search runs without it."""

from __future__ import annotations

import ast
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from gateway.answer import Answer
from gateway.semantic import store as store_mod
from gateway.semantic.client import ClientStore
from gateway.semantic.edge import EdgeStore
from gateway.semantic.store import Entry, MustFilter, Scope, VectorStore, collection_name

DIM = 16
CTX = "a" * 64
OTHER_CTX = "b" * 64


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def entry(tenant: str, question: str, *, ctx: str = CTX, version: str = "", ttl: float = 3600.0,
          now: float | None = None) -> Entry:
    now = time.time() if now is None else now
    return Entry(tenant, ctx, version, question, Answer(text=f"answer to {question}", model="m", provider="openai"),
                 now, now + ttl)


@pytest.fixture(params=["edge", "client"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorStore]:
    name = collection_name("test-model", DIM)
    s: VectorStore = EdgeStore(tmp_path, name, DIM) if request.param == "edge" else ClientStore(":memory:", name, DIM,
                                                                                              timeout=5)
    await s.open()
    try:
        yield s
    finally:
        await s.close()


async def test_search_stays_inside_tenant_context_and_version(store: VectorStore) -> None:
    v = vec(1)
    await store.upsert([(entry("acme", "q"), v), (entry("globex", "q"), v), (entry("acme", "q2", ctx=OTHER_CTX), v),
                        (entry("acme", "q3", version="kb-2"), v)])
    now = time.time()
    found = await store.search(Scope("acme", CTX, "", now), v, 10, 0.0)
    assert [c.payload["tenant"] for c in found] == ["acme"]
    assert found[0].question == "q" and found[0].score == pytest.approx(1.0, abs=1e-4)
    assert found[0].answer().text == "answer to q"
    assert [c.question for c in await store.search(Scope("globex", CTX, "", now), v, 10, 0.0)] == ["q"]
    assert [c.question for c in await store.search(Scope("acme", OTHER_CTX, "", now), v, 10, 0.0)] == ["q2"]
    assert [c.question for c in await store.search(Scope("acme", CTX, "kb-2", now), v, 10, 0.0)] == ["q3"]
    assert await store.search(Scope("initech", CTX, "", now), v, 10, 0.0) == []


async def test_expired_entries_are_filtered_and_purged(store: VectorStore) -> None:
    now = time.time()
    await store.upsert([(entry("acme", "old", ttl=10, now=now - 100), vec(2)), (entry("acme", "new"), vec(3))])
    found = await store.search(Scope("acme", CTX, "", now), vec(2), 10, -1.0)
    assert [c.question for c in found] == ["new"]
    assert await store.purge_expired(now) == 1
    assert await store.count("acme") == 1


async def test_purge_by_tenant_and_version(store: VectorStore) -> None:
    await store.upsert([(entry("acme", "a", version="v1"), vec(4)), (entry("acme", "b", version="v2"), vec(5)),
                        (entry("globex", "c", version="v1"), vec(6))])
    assert await store.purge("acme", "v1") == 1
    assert await store.count("acme") == 1 and await store.count("globex") == 1
    assert await store.purge("acme") == 1
    assert await store.count("acme") == 0 and await store.count("globex") == 1
    with pytest.raises(ValueError):
        await store.purge("")


async def test_same_question_overwrites(store: VectorStore) -> None:
    await store.upsert([(entry("acme", "same"), vec(7))])
    await store.upsert([(entry("acme", "same"), vec(7))])
    assert await store.count("acme") == 1


async def test_min_score_and_limit(store: VectorStore) -> None:
    base = vec(8)
    await store.upsert([(entry("acme", f"q{i}"), vec(100 + i)) for i in range(6)] + [(entry("acme", "near"), base)])
    found = await store.search(Scope("acme", CTX, "", time.time()), base, 3, 0.99)
    assert [c.question for c in found] == ["near"]
    assert len(await store.search(Scope("acme", CTX, "", time.time()), base, 3, -1.0)) == 3


def test_scope_cannot_be_built_without_tenant_or_context() -> None:
    for tenant, ctx in (("", CTX), (None, CTX), ("acme", ""), ("acme", "not-a-hash"), ("a b", CTX)):
        with pytest.raises(ValueError):
            Scope(tenant, ctx, "", time.time())  # type: ignore[arg-type]


async def test_search_rejects_anything_but_a_scope(store: VectorStore) -> None:
    with pytest.raises(TypeError):
        await store.search(MustFilter("acme", CTX, "", time.time()), vec(1), 5, 0.0)  # type: ignore[arg-type]


async def test_every_query_carries_the_must_filter(store: VectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spy on the adapter's one query method: each call holds tenant, context, version and now."""
    seen: list[MustFilter] = []
    original = store._query

    async def spy(must: MustFilter, vector: list[float], limit: int, min_score: float):  # type: ignore[no-untyped-def]
        seen.append(must)
        return await original(must, vector, limit, min_score)

    monkeypatch.setattr(store, "_query", spy)
    now = time.time()
    await store.search(Scope("acme", CTX, "v9", now), vec(1), 5, 0.0)
    assert seen == [MustFilter("acme", CTX, "v9", now)]


def test_no_code_path_queries_qdrant_outside_the_scoped_query() -> None:
    """Source scan of the whole package: Qdrant's search calls (`query`, `query_points`, `search`,
    `query_batch`, `search_batch`, `scroll`) appear only inside the adapters' `_query`, which gets
    its filter from `Scope.must()` only."""
    root = Path(store_mod.__file__).resolve().parents[1]
    banned = {"query_points", "query_batch", "search_batch", "query_batch_points", "scroll", "search_points"}
    offenders: list[str] = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                attr = node.func.attr
                searching = attr in banned or (attr == "query" and "shard" in ast.unparse(node.func.value))
                allowed = fn.name == "_query" or (fn.name == "run" and path.name == "edge.py")
                if searching and not allowed:
                    offenders.append(f"{path.relative_to(root)}:{node.lineno} {fn.name}: {ast.unparse(node.func)}")
    assert offenders == []
    # the two adapters' queries build their filter from the MustFilter and nothing else
    for module in ("edge.py", "client.py"):
        src = (root / "semantic" / module).read_text()
        assert "filter=_must(must)" in src or "query_filter=_must(must)" in src


async def test_unreachable_server_is_unavailable(tmp_path: Path) -> None:
    s = ClientStore("http://127.0.0.1:9", collection_name("m", DIM), DIM, timeout=0.5)
    with pytest.raises(store_mod.VectorStoreUnavailable):
        await s.open()
    with pytest.raises(store_mod.VectorStoreUnavailable):
        await s.search(Scope("acme", CTX, "", time.time()), vec(1), 5, 0.0)
    await s.close()


async def test_edge_reopens_its_shard(tmp_path: Path) -> None:
    name = collection_name("m", DIM)
    s = EdgeStore(tmp_path, name, DIM)
    await s.open()
    await s.upsert([(entry("acme", "kept"), vec(9))])
    await s.close()
    s2 = EdgeStore(tmp_path, name, DIM)
    await s2.open()
    assert [c.question for c in await s2.search(Scope("acme", CTX, "", time.time()), vec(9), 5, 0.5)] == ["kept"]
    await s2.close()


def test_entry_ids_are_scoped() -> None:
    assert entry("acme", "q").id != entry("globex", "q").id
    assert entry("acme", "q").id == entry("acme", "q").id
    assert uuid.UUID(entry("acme", "q").id)


async def test_expired_neighbours_do_not_hide_a_live_entry(store: VectorStore) -> None:
    # Expired points stay in the collection until the next sweep; the embedded adapter checks
    # expiry on its results, so it must fetch past them to the live one.
    v = vec(7)
    past = time.time() - 7200
    await store.upsert([(entry("acme", f"old {i}", ttl=60, now=past), v) for i in range(5)])
    near = v + 0.05 * vec(8)
    await store.upsert([(entry("acme", "live"), near / np.linalg.norm(near))])
    found = await store.search(Scope("acme", CTX, "", time.time()), v, 5, 0.0)
    assert [c.question for c in found] == ["live"]


def test_scope_key_separates_tenant_context_and_version() -> None:
    keys = {store_mod.scope_key(t, c, ver) for t in ("acme", "globex") for c in (CTX, OTHER_CTX) for ver in ("", "v2")}
    assert len(keys) == 8
    assert Scope("acme", CTX, "v2", 0.0).must().key == store_mod.scope_key("acme", CTX, "v2")
    assert entry("acme", "q", version="v2").payload()["scope"] == store_mod.scope_key("acme", CTX, "v2")


async def test_edge_batches_concurrent_searches_each_in_its_own_scope(tmp_path: Path) -> None:
    """Concurrent searches go to the engine together (`query_batch`); each still gets exactly what
    it gets alone: its own tenant's and context's entries, in the same order with the same scores."""
    import asyncio

    s = EdgeStore(tmp_path, collection_name("m", DIM), DIM)
    await s.open()
    try:
        tenants = ["acme", "globex", "initech"]
        await s.upsert([(entry(t, f"{t} q{i}", ctx=c), vec(100 * k + i + (50 if c == OTHER_CTX else 0)))
                        for k, t in enumerate(tenants) for i in range(30) for c in (CTX, OTHER_CTX)])
        now = time.time()
        asks = [(Scope(t, c, "", now), vec(1000 + j)) for j, (t, c) in enumerate(
            (t, c) for t in tenants for c in (CTX, OTHER_CTX) for _ in range(4))]
        alone = [await s.search(scope, v, 5, -1.0) for scope, v in asks]
        batches0 = s.search_batches
        together = await asyncio.gather(*(s.search(scope, v, 5, -1.0) for scope, v in asks))
        assert s.search_batches - batches0 < len(asks)  # they did share batches
        for (scope, _), one, many in zip(asks, alone, together, strict=True):
            assert [(c.id, c.score) for c in many] == [(c.id, c.score) for c in one]
            assert len(one) == 5 and all(scope.admits(c.payload) for c in many)
    finally:
        await s.close()
