"""The embedder: the packaged model (English and Chinese), micro-batching off the loop, the LRU."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from gateway.semantic.embedder import Embedder, backend_from_settings

from ._helpers import use_backend


def test_default_model_is_packaged_and_tells_chinese_apart() -> None:
    backend = use_backend()
    assert backend.name == "use-multilingual-v3" and backend.dim == 512
    v = backend.encode(["增值税专用发票怎么开？", "增值税普通发票怎么开？", "How do I reset my password?"])
    assert v.shape == (3, 512) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) < 0.99  # all-MiniLM maps both to [UNK] runs: cosine 1.0


def test_backend_selection() -> None:
    assert backend_from_settings(None, "http://x/v1", None).name == "use-multilingual-v3"
    assert backend_from_settings("openai:text-embedding-3-small", "http://x/v1", "k").name == \
        "openai:text-embedding-3-small"
    assert backend_from_settings("/models/minilm", "http://x/v1", None).name == "st:/models/minilm"


class CountingBackend:
    """Wraps the real model and records which thread and batch sizes it sees."""

    name, dim, anchor = "counting", 512, 0.6

    def __init__(self, fail: bool = False) -> None:
        self.inner = use_backend()
        self.batches: list[int] = []
        self.threads: set[str] = set()
        self.fail = fail

    def load(self) -> None:
        self.threads.add(threading.current_thread().name)

    def encode(self, texts: list[str]) -> np.ndarray:
        self.threads.add(threading.current_thread().name)
        if self.fail:
            raise RuntimeError("model crashed")
        self.batches.append(len(texts))
        return self.inner.encode(texts)


async def test_concurrent_requests_share_batches_and_stay_off_the_loop() -> None:
    backend = CountingBackend()
    emb = Embedder(backend, window_ms=5, max_batch=16)
    await emb.start()
    texts = [f"question number {i}" for i in range(40)]
    vectors = await asyncio.gather(*(emb.embed(t) for t in texts))
    assert len(vectors) == 40 and all(v.shape == (512,) for v in vectors)
    assert sum(backend.batches) == 40 and len(backend.batches) < 40 and max(backend.batches) <= 16
    assert backend.threads and threading.current_thread().name not in backend.threads
    assert np.allclose(vectors[3], use_backend().encode([texts[3]])[0], atol=1e-5)
    await emb.close()


async def test_lru_and_inflight_sharing() -> None:
    backend = CountingBackend()
    emb = Embedder(backend, window_ms=2, cache_size=2)
    await emb.start()
    same = await asyncio.gather(*(emb.embed("one question") for _ in range(5)))
    assert sum(backend.batches) == 1 and all(np.array_equal(same[0], v) for v in same)
    await emb.embed("one question")
    assert sum(backend.batches) == 1  # from the LRU
    await emb.embed("two")
    await emb.embed("three")
    await emb.embed("one question")  # evicted by then
    assert sum(backend.batches) == 4
    await emb.close()


async def test_model_failure_reaches_every_waiter() -> None:
    emb = Embedder(CountingBackend(fail=True), window_ms=2)
    await emb.start()
    results = await asyncio.gather(*(emb.embed(f"q{i}") for i in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    with pytest.raises(RuntimeError):
        await emb.embed("again")  # the batcher survives a failed batch
    await emb.close()
