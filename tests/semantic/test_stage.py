"""The stage on real parts: the packaged model, qdrant-edge in a temp dir (or a dead Qdrant server),
request contexts built like the handler builds them, and a clock the test moves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.answer import Answer
from gateway.config import Settings
from gateway.errors import GatewayError
from gateway.semantic.embedder import Embedder
from gateway.semantic.stage import SemanticCacheStage

from ._helpers import chat, make_ctx, policy, use_backend

QUESTION = "How do I change the language of the mobile app?"
PARAPHRASE = "In the mobile app, how can I change the language?"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def _stage(settings: Settings, clock: Clock) -> SemanticCacheStage:
    stage = SemanticCacheStage(settings, embedder=Embedder(use_backend()), clock=clock)
    await stage.start()
    return stage


@pytest.fixture
async def stage(tmp_path: Path, clock: Clock) -> AsyncIterator[SemanticCacheStage]:
    s = await _stage(Settings(data_dir=tmp_path), clock)
    try:
        yield s
    finally:
        await s.stop()


async def answer(stage: SemanticCacheStage, question: str, text: str, **kw: object) -> None:
    """A miss answered by the upstream, then written."""
    ctx = make_ctx(chat(question), **kw)  # type: ignore[arg-type]
    assert await stage.before(ctx) is None
    ctx.answer = Answer(text=text, model="gpt-4o-mini", provider="openai", usage_raw={"prompt_tokens": 9})
    ctx.answered_by = "upstream"
    await stage.after(ctx)
    await stage.drain()


async def test_paraphrase_hits_with_the_stored_answer(stage: SemanticCacheStage) -> None:
    await answer(stage, QUESTION, "Settings → Language.")
    ctx = make_ctx(chat(PARAPHRASE))
    hit = await stage.before(ctx)
    assert hit is not None and hit.status == "semantic-hit" and hit.answer is not None
    assert hit.answer.text == "Settings → Language." and 0.9 <= (hit.similarity or 0) <= 1.0
    assert ctx.record["saved_from"] == {"layer": "semantic", "usage_raw": {"prompt_tokens": 9},
                                        "provider": "openai", "model": "gpt-4o-mini"}
    await stage.after(ctx)  # a hit is not written again
    assert await stage.store.count("acme") == 1  # type: ignore[union-attr]


async def test_other_tenant_slot_edit_and_context_miss(stage: SemanticCacheStage) -> None:
    await answer(stage, QUESTION, "Settings → Language.")
    assert await stage.before(make_ctx(chat(QUESTION), tenant="globex")) is None
    assert await stage.before(make_ctx(chat("How do I change the language of the desktop app?"))) is None
    assert await stage.before(make_ctx({**chat(QUESTION), "model": "gpt-4o"})) is None
    assert await stage.before(make_ctx(chat(QUESTION, system="Answer in French."))) is None


async def test_expiry_version_and_purge(stage: SemanticCacheStage, clock: Clock) -> None:
    await answer(stage, QUESTION, "A.", pol=policy("acme", ttl="1h", version="kb-1"))
    pol = policy("acme", ttl="1h", version="kb-1")
    assert await stage.before(make_ctx(chat(PARAPHRASE), pol=pol)) is not None
    assert await stage.before(make_ctx(chat(PARAPHRASE), pol=policy("acme", version="kb-2"))) is None
    clock.now += 3601
    assert await stage.before(make_ctx(chat(PARAPHRASE), pol=pol)) is None
    assert await stage.purge_expired() == 1
    await answer(stage, QUESTION, "B.", pol=pol)
    assert await stage.purge("acme", "kb-1") == 1


async def test_no_cache_no_store_and_exclusions(stage: SemanticCacheStage) -> None:
    await answer(stage, QUESTION, "Fresh.", no_cache=True)  # no lookup, still stored
    assert await stage.before(make_ctx(chat(PARAPHRASE))) is not None
    await answer(stage, "How do I delete my workspace?", "Nope.", no_store=True)
    await answer(stage, "What is the latest app version?", "9.1")
    assert await stage.store.count("acme") == 1  # type: ignore[union-attr]


async def test_threshold_header_only_raises(stage: SemanticCacheStage) -> None:
    await answer(stage, QUESTION, "A.")
    assert await stage.before(make_ctx(chat(PARAPHRASE), headers={"x-gateway-semantic-threshold": "0.1"})) is not None
    assert await stage.before(make_ctx(chat(PARAPHRASE), headers={"x-gateway-semantic-threshold": "0.9999"})) is None
    with pytest.raises(GatewayError):
        await stage.before(make_ctx(chat(PARAPHRASE), headers={"x-gateway-semantic-threshold": "high"}))


async def test_incomplete_answers_are_not_written(stage: SemanticCacheStage) -> None:
    ctx = make_ctx(chat(QUESTION))
    await stage.before(ctx)
    ctx.answer = Answer(text="cut", model="m", finish_reason="length")
    ctx.answered_by = "upstream"
    await stage.after(ctx)
    await stage.drain()
    assert await stage.store.count("acme") == 0  # type: ignore[union-attr]


async def test_store_down_is_a_plain_miss(tmp_path: Path, clock: Clock) -> None:
    stage = await _stage(Settings(data_dir=tmp_path, qdrant_url="http://127.0.0.1:9"), clock)
    try:
        ctx = make_ctx(chat(QUESTION))
        assert await stage.before(ctx) is None
        assert ctx.record["semantic_cache_skip"] == "unavailable"
        ctx.answer, ctx.answered_by = Answer(text="A.", model="m"), "upstream"
        await stage.after(ctx)
        await stage.drain()
    finally:
        await stage.stop()
