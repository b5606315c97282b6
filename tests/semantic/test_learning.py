"""The learning loop on the real stage: a reworded question misses until evidence opens its lane;
feedback on a wrong hit drops the entry and its look-alikes miss; sampled verification compares."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.answer import Answer
from gateway.config import Settings
from gateway.semantic import structure
from gateway.semantic.embedder import Embedder
from gateway.semantic.guard import REWORDED
from gateway.semantic.stage import SemanticCacheStage

from ._helpers import chat, make_ctx, policy, use_backend

CACHED = "How do I reset my password?"
# reworded, same operation and object; the second opinion is not confident (MiniLM ≈ 0.70, bar 0.80)
REWORD = "Is there a way for me to reset my password quickly from my phone?"


@pytest.fixture
async def stage(tmp_path: Path) -> AsyncIterator[SemanticCacheStage]:
    s = SemanticCacheStage(Settings(data_dir=tmp_path), embedder=Embedder(use_backend()), rng=random.Random(1))
    await s.start()
    try:
        yield s
    finally:
        await s.stop()


@pytest.fixture
async def opted_in(tmp_path: Path) -> AsyncIterator[SemanticCacheStage]:
    """A deployment that serves confident reworded pairs before evidence (off by default)."""
    settings = Settings(data_dir=tmp_path, semantic={"params": {"reworded_bar_en": 0.80, "reworded_bar_zh": 0.84}})
    s = SemanticCacheStage(settings, embedder=Embedder(use_backend()), rng=random.Random(1))
    await s.start()
    try:
        yield s
    finally:
        await s.stop()


async def ask(stage: SemanticCacheStage, question: str, upstream_text: str | None, **semantic: object) -> object:
    ctx = make_ctx(chat(question), pol=policy("acme", **semantic))
    hit = await stage.before(ctx)
    if hit is None and upstream_text is not None:
        ctx.answer = Answer(text=upstream_text, model="gpt-4o-mini", provider="openai")
        ctx.answered_by = "upstream"
        await stage.after(ctx)
        await stage.drain()
    return hit, ctx


def _open_the_lane(stage: SemanticCacheStage, sim: float) -> None:
    """Evidence as a busy tenant would have gathered it: many right reworded hits near `sim`."""
    for i in range(1500):
        stage.learner.evidence.record("acme", "en", REWORDED, f"seen{i % 40}", sim - 0.15 * (i / 1500), True)
    structure.load("en")


async def test_reworded_misses_before_evidence_and_the_miss_is_compared(stage: SemanticCacheStage) -> None:
    await ask(stage, CACHED, "Use the reset link.")
    hit, ctx = await ask(stage, REWORD, "Use the reset link.")  # the same fresh answer: evidence of a right hit
    assert hit is None
    assert any(r.startswith("reworded:") for r in ctx.record["semantic_rejected"])  # type: ignore[attr-defined]
    obs = stage.learner.evidence.observations("acme", "en", REWORDED)
    assert len(obs) == 1 and obs[0][1] is True


async def test_feedback_on_a_wrong_hit_drops_the_entry_and_look_alikes_miss(stage: SemanticCacheStage) -> None:
    await ask(stage, CACHED, "Use the reset link.")
    vector = await stage.embedder.embed(CACHED)
    other = await stage.embedder.embed(REWORD)
    _open_the_lane(stage, float(vector @ other) + 0.01)
    hit, ctx = await ask(stage, REWORD, None)
    assert hit is not None and hit.answer.text == "Use the reset link."  # type: ignore[attr-defined]
    result = await stage.feedback(ctx.request_id, False)  # type: ignore[attr-defined]
    assert result is not None and result["entry_dropped"] is True
    again, _ = await ask(stage, REWORD, None)
    assert again is None  # the entry is gone, and the neighbourhood learned a wrong hit at that similarity
    assert await stage.feedback("gw-unknown", True) is None


async def test_sampled_verification_sends_a_would_be_hit_upstream(stage: SemanticCacheStage) -> None:
    await ask(stage, CACHED, "Use the reset link.")
    hit, ctx = await ask(stage, CACHED + " ", "Use the reset link.", verify_share=1.0)  # same content
    assert hit is None and ctx.record["semantic_verify"] == "same_content"  # type: ignore[attr-defined]
    assert stage.learner.evidence.observations("acme", "en", "same_content")[0][1] is True
    hit, _ = await ask(stage, CACHED + " ", None, verify_share=0.0)
    assert hit is not None


LANGUAGE = "How do I change the language of the mobile app?"
LANGUAGE_REWORDED = "The mobile app is in the wrong language, how can I change it?"  # MiniLM ≈ 0.94, same action


async def test_by_default_a_confident_reworded_pair_waits_for_evidence(stage: SemanticCacheStage) -> None:
    await ask(stage, LANGUAGE, "Settings → Language.")
    miss, _ = await ask(stage, LANGUAGE_REWORDED, None)
    assert miss is None


async def test_a_confident_reworded_pair_is_served_before_evidence_when_opted_in(
        opted_in: SemanticCacheStage) -> None:
    stage = opted_in
    await ask(stage, LANGUAGE, "Settings → Language.")
    hit, ctx = await ask(stage, LANGUAGE_REWORDED, None)
    assert hit is not None and hit.answer.text == "Settings → Language."  # type: ignore[attr-defined]
    assert ctx.record["semantic_lane"] == REWORDED  # type: ignore[attr-defined]
    # the look-alikes: another object of the same action is no confident paraphrase
    await ask(stage, "I forgot my password, how do I reset it?", "Use the reset link.")
    for other in ("How do I reset my username?", "How do I reset my email address?"):
        miss, _ = await ask(stage, other, None)
        assert miss is None


async def test_feedback_on_a_confident_hit_closes_that_kind_of_look_alike(opted_in: SemanticCacheStage) -> None:
    stage = opted_in
    await ask(stage, LANGUAGE, "Settings → Language.")
    hit, ctx = await ask(stage, LANGUAGE_REWORDED, None)
    assert hit is not None
    result = await stage.feedback(ctx.request_id, False)  # type: ignore[attr-defined]
    assert result is not None and result["entry_dropped"] is True and result["lane"] == REWORDED
    await ask(stage, LANGUAGE, "Settings → Language.")  # stored again: a fresh entry
    again, ctx = await ask(stage, LANGUAGE_REWORDED, None)
    assert again is None  # a pair this similar was shown wrong in this neighbourhood: no prior any more
    assert any(r.startswith("reworded:") for r in ctx.record["semantic_rejected"])  # type: ignore[attr-defined]
    other = make_ctx(chat(LANGUAGE), tenant="globex", pol=policy("globex"))
    assert await stage.before(other) is None  # another tenant's neighbourhood is untouched:
    other.answer = Answer(text="Settings → Language.", model="gpt-4o-mini", provider="openai")
    other.answered_by = "upstream"
    await stage.after(other)
    await stage.drain()
    assert await stage.before(make_ctx(chat(LANGUAGE_REWORDED), tenant="globex", pol=policy("globex"))) is not None
