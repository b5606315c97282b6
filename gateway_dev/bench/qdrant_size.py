"""Bytes per semantic-cache entry in Qdrant's storage engine, measured, then extrapolated.

Entries are written the way the semantic stage writes them (`EdgeStore.upsert` of `Entry` points:
the packaged embedder's real vectors of generated support questions, the compressed answer and the
indexed payload: tenant, context hash, version, expiry), into qdrant-edge, Qdrant's own engine
embedded, at two sizes. The on-disk size grows linearly; the slope between the two sizes (fixed
overhead such as preallocated WAL segments cancels out) is the bytes per entry, and 10^6 times it
is the figure for a million entries. A Qdrant server stores the same segments; its RAM need is
at least the vectors (dim × 4 bytes each) plus the HNSW graph, which a server builds once a segment
passes its indexing threshold (edge keeps small segments plain).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gateway.answer import Answer
from gateway.config import Settings
from gateway.semantic.edge import EdgeStore
from gateway.semantic.embedder import backend_from_settings
from gateway.semantic.store import Entry, MustFilter, collection_name
from gateway_dev.bench.semantic_lookup import questions

ANSWER = ("To do that, open Settings, choose the item, and confirm with the button at the bottom. "
          "The change applies to every device signed in to the same account within a minute.")


@dataclass
class SizeResult:
    dim: int
    embedder: str
    points: tuple[int, int]
    segments: tuple[int, int]  # bytes of the segments (vectors, payload, payload indexes, id tracker)
    wal: tuple[int, int]  # bytes of the write-ahead log
    search_cpu_ms: float = float("nan")  # CPU per filtered top-5 search at the larger size

    @staticmethod
    def _slope(points: tuple[int, int], sizes: tuple[int, int]) -> float:
        return (sizes[1] - sizes[0]) / (points[1] - points[0])

    @property
    def per_entry(self) -> float:
        """Segment bytes per entry: what stays on disk (and, for vectors, in RAM) per entry."""
        return self._slope(self.points, self.segments)

    @property
    def wal_per_entry(self) -> float:
        """WAL bytes per entry written; a server truncates its WAL (`wal_capacity_mb`), so this is
        write traffic, not retained size."""
        return self._slope(self.points, self.wal)

    @property
    def per_million(self) -> float:
        return self.per_entry * 1_000_000


def du(path: Path) -> int:
    # Allocated blocks, not apparent sizes: the engine preallocates sparse files (WAL segments,
    # vector chunks) far larger than what they hold.
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


async def _fill(folder: Path, vectors: np.ndarray, texts: list[str], n: int, name: str, dim: int) -> float:
    """Write `n` entries; returns the CPU ms of one filtered top-5 search among them."""
    store = EdgeStore(folder, collection_name(name, dim), dim, timeout=60.0)
    await store.open()
    now = time.time()
    tenants = [f"tenant{i:02d}" for i in range(20)]
    batch: list[tuple[Entry, np.ndarray]] = []
    for i in range(n):
        answer = Answer(text=f"{ANSWER} (#{i})", model="gpt-4o-mini", provider="openai", finish_reason="stop",
                        usage_raw={"prompt_tokens": 30, "completion_tokens": 40})
        entry = Entry(tenants[i % len(tenants)], f"{i % 97:064x}", "", texts[i % len(texts)] + f" #{i}", answer,
                      now, now + 86400)
        batch.append((entry, vectors[i % len(vectors)]))
        if len(batch) == 500:
            await store.upsert(batch)
            batch = []
    if batch:
        await store.upsert(batch)
    assert await store.count() == n
    searches = 300
    cpu = time.process_time()
    for i in range(searches):  # the stage's query: tenant + context + version + unexpired, top 5
        must = MustFilter(tenants[i % len(tenants)], f"{i % 97:064x}", "", now)
        await store._query(must, vectors[(i * 7) % len(vectors)].tolist(), 5, 0.0)
    search_ms = (time.process_time() - cpu) * 1000 / searches
    await store.close()  # flushed: what is on disk is the engine's whole state
    return search_ms


def sizes(folder: Path) -> tuple[int, int]:
    """(segment bytes, WAL bytes) under `folder`."""
    wal = sum(du(p) for p in folder.rglob("wal") if p.is_dir())
    return du(folder) - wal, wal


def measure(small: int = 1000, large: int = 5000, distinct: int = 2000) -> SizeResult:
    backend = backend_from_settings(Settings().embedding_model, None, None)
    texts = questions(distinct, seed=11)
    vectors = np.concatenate([backend.encode(texts[i:i + 64]) for i in range(0, len(texts), 64)])
    found: list[tuple[int, int]] = []
    for n in (small, large):
        folder = Path(tempfile.mkdtemp(prefix="gw-qdrant-size-"))
        try:
            search_ms = asyncio.run(_fill(folder, vectors, texts, n, backend.name, backend.dim))
            found.append(sizes(folder))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return SizeResult(backend.dim, backend.name, (small, large), (found[0][0], found[1][0]), (found[0][1], found[1][1]),
                      search_ms)


if __name__ == "__main__":
    r = measure()
    print(f"{r.embedder} {r.dim}-d: segments {r.segments} B and WAL {r.wal} B for {r.points} entries → "
          f"{r.per_entry:.0f} B/entry ({r.per_million / 2**30:.2f} GiB per million; vectors alone "
          f"{r.dim * 4} B), WAL {r.wal_per_entry:.0f} B written per entry; {r.search_cpu_ms:.2f} ms CPU per search")
