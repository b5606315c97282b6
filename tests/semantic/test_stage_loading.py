"""The lazily loaded layer: nothing loads while no tenant enables it; the first tenant that does starts
the load in the background (requests skip the layer meanwhile, they never wait for it); then it serves."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from gateway.answer import Answer
from gateway.config import Settings
from gateway.semantic.embedder import Embedder
from gateway.semantic.stage import SemanticCacheStage

from ._helpers import chat, make_ctx, policy, use_backend


class SlowLoad:
    """The packaged model behind a load that waits until the test lets it finish."""

    def __init__(self) -> None:
        self.inner = use_backend()
        self.name, self.dim, self.anchor = self.inner.name, self.inner.dim, self.inner.anchor
        self.release = asyncio.Event()
        self.loads = 0
        self.loop = asyncio.get_running_loop()

    def load(self) -> None:  # in the embedder's worker thread
        self.loads += 1
        asyncio.run_coroutine_threadsafe(self.release.wait(), self.loop).result(30)

    def encode(self, texts: list[str]):  # type: ignore[no-untyped-def]
        return self.inner.encode(texts)


def _set(**semantic: object) -> SimpleNamespace:
    return SimpleNamespace(policies={"acme": policy("acme", **semantic)})


async def test_nothing_loads_until_a_tenant_enables_the_layer(tmp_path: Path) -> None:
    backend = SlowLoad()
    stage = SemanticCacheStage(Settings(data_dir=tmp_path), embedder=Embedder(backend), lazy=True)
    await stage.start()
    try:
        assert stage.state == "off" and backend.loads == 0 and stage.store is None
        assert stage.prepare(_set(enabled=False)) is None and stage.state == "off"
        off = make_ctx(chat("How do I reset my password?"), pol=policy("acme", enabled=False))
        assert await stage.before(off) is None and off.record["semantic_cache_skip"] == "disabled"
        assert stage.state == "off"

        # an enabled tenant's request starts the load and skips the layer without waiting for it
        ctx = make_ctx(chat("How do I reset my password?"))
        assert await asyncio.wait_for(stage.before(ctx), 10.0) is None  # the load waits for release: never awaited
        assert ctx.record["semantic_cache_skip"] == "loading" and stage.state == "loading"
        task = stage.prepare(_set())
        assert task is not None and stage.prepare(_set()) is task  # one load, however many ask
        backend.release.set()
        await asyncio.wait_for(task, 30)
        assert stage.state == "ready" and backend.loads == 1 and stage.store is not None

        # loaded: the layer writes and serves
        ctx = make_ctx(chat("How do I reset my password?"))
        assert await stage.before(ctx) is None
        ctx.answer = Answer(text="Use the reset link.", model="gpt-4o-mini", provider="openai", usage_raw={})
        ctx.answered_by = "upstream"
        await stage.after(ctx)
        await stage.drain()
        hit = await stage.before(make_ctx(chat("How do I reset my password?")))
        assert hit is not None and hit.answer is not None and hit.answer.text == "Use the reset link."
    finally:
        await stage.stop()


async def test_a_failed_load_leaves_the_layer_off_and_says_so(tmp_path: Path) -> None:
    class Broken(SlowLoad):
        def load(self) -> None:
            raise OSError("no model file")

    stage = SemanticCacheStage(Settings(data_dir=tmp_path), embedder=Embedder(Broken()), lazy=True)
    await stage.start()
    try:
        task = stage.prepare(_set())
        assert task is not None
        await asyncio.wait_for(task, 30)
        assert stage.state.startswith("failed")
        ctx = make_ctx(chat("How do I reset my password?"))
        assert await stage.before(ctx) is None and ctx.record["semantic_cache_skip"] == "unavailable"
    finally:
        await stage.stop()


async def test_a_failure_after_the_embedder_is_reported_not_stuck_loading(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import gateway.semantic.lifecycle as stage_module  # where the layer loads

    def broken() -> None:
        raise RuntimeError("word lists missing")

    monkeypatch.setattr(stage_module, "warm_up", broken)
    backend = SlowLoad()
    backend.release.set()
    stage = SemanticCacheStage(Settings(data_dir=tmp_path), embedder=Embedder(backend), lazy=True)
    await stage.start()
    try:
        task = stage.prepare(_set())
        assert task is not None
        await asyncio.wait_for(task, 30)
        assert stage.state == "failed: RuntimeError" and stage.prepare(_set()) is None
    finally:
        await stage.stop()
