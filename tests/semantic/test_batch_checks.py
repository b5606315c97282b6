"""The checks batched across lookups give the answers the checks give one by one."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from gateway.semantic import paraphrase, structure
from gateway.semantic.batch_checks import CheckBatcher
from gateway.semantic.lexical import analyze

PAIRS = Path(__file__).resolve().parents[1] / "data" / "eval" / "semantic_pairs_dev.jsonl"


def _english_pairs(n: int) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    return [(r["cached"], r["query"]) for r in rows if analyze(r["query"]).lang == "en"][:n]


@pytest.fixture(scope="module")
def loaded() -> None:
    structure.load("en")
    paraphrase.load()
    if structure._spacy() is None or paraphrase._load_model() is None:
        pytest.skip("the English parser or the paraphrase model is not installed")


def test_a_batched_parse_and_encoding_equal_one_by_one(loaded: None) -> None:
    texts = list(dict.fromkeys(t for pair in _english_pairs(60) for t in pair))
    nlp = structure._spacy()
    alone = [structure._en_frame(nlp(t)) for t in texts]
    vectors = np.stack([paraphrase.encode([t])[0] for t in texts])  # type: ignore[index]
    structure.frame.cache_clear()
    paraphrase.vector.cache_clear()
    structure.prime(texts)
    paraphrase.prime(texts)
    assert not structure._primed and not paraphrase._primed  # everything went into the caches
    hits = structure.frame.cache_info().hits
    assert [structure.frame(t, "en") for t in texts] == alone
    assert structure.frame.cache_info().hits == hits + len(texts)  # no parse the second time
    batched = np.stack([paraphrase.vector(t) for t in texts])  # type: ignore[misc]
    assert np.array_equal(batched, vectors)  # bit for bit: a decision cannot move


async def test_concurrent_checks_share_a_batch_and_keep_their_answers(loaded: None) -> None:
    pairs = _english_pairs(40)
    expected = [(structure.roles_agree(c, q, "en"), structure.agree(c, q, "en"),
                 paraphrase.confident(c, q, "en", 0.8, 0.80, 0.95)) for c, q in pairs]
    structure.frame.cache_clear()
    paraphrase.vector.cache_clear()
    batcher = CheckBatcher(window_ms=5.0)
    try:
        got = await asyncio.gather(*(asyncio.gather(
            batcher.run(structure.roles_agree, c, q, "en", parse=(c, q)),
            batcher.run(structure.agree, c, q, "en", parse=(c, q)),
            batcher.run(paraphrase.confident, c, q, "en", 0.8, 0.80, 0.95, vectors=(c, q))) for c, q in pairs))
        assert [tuple(g) for g in got] == expected
        assert batcher.jobs == 3 * len(pairs) and batcher.batches < batcher.jobs / 4
    finally:
        await batcher.close()


async def test_a_failing_check_fails_alone(loaded: None) -> None:
    def broken() -> None:
        raise ValueError("no")

    batcher = CheckBatcher(window_ms=5.0)
    try:
        results = await asyncio.gather(batcher.run(broken), batcher.run(lambda: 7), return_exceptions=True)
        assert isinstance(results[0], ValueError) and results[1] == 7
    finally:
        await batcher.close()


async def test_a_written_question_is_prepared_for_the_checks(loaded: None, tmp_path: Path) -> None:
    from gateway.config import Settings
    from gateway.semantic.embedder import Embedder
    from gateway.semantic.stage import SemanticCacheStage

    from ._helpers import use_backend

    stage = SemanticCacheStage(Settings(data_dir=tmp_path), embedder=Embedder(use_backend()))
    await stage.start()
    try:
        question = "How can I export the billing report from the admin console?"
        structure.frame.cache_clear()
        paraphrase.vector.cache_clear()
        await stage.prepare_question(question)
        frames, vectors = structure.frame.cache_info(), paraphrase.vector.cache_info()
        structure.frame(question, "en")
        paraphrase.vector(question)
        assert structure.frame.cache_info().hits == frames.hits + 1  # parsed at write time, not now
        assert paraphrase.vector.cache_info().hits == vectors.hits + 1
    finally:
        await stage.stop()


async def test_a_written_question_is_parsed_without_the_second_opinion(loaded: None, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With MiniLM not loaded (the default `reworded_bar_en` > 1) the parse is still made at write
    time, and MiniLM is neither loaded nor run for it."""
    from gateway.config import Settings
    from gateway.semantic.embedder import Embedder
    from gateway.semantic.stage import SemanticCacheStage

    from ._helpers import use_backend

    def no_encoding(texts: list[str]) -> None:
        raise AssertionError("MiniLM ran for a preparation it was not loaded for")

    monkeypatch.setattr(paraphrase, "ready", lambda: False)
    monkeypatch.setattr(paraphrase, "prime", no_encoding)
    stage = SemanticCacheStage(Settings(data_dir=tmp_path), embedder=Embedder(use_backend()))
    await stage.start()
    try:
        question = "How can I rename the shared calendar from the desktop client?"
        structure.frame.cache_clear()
        await stage.prepare_question(question)
        frames = structure.frame.cache_info()
        structure.frame(question, "en")
        assert structure.frame.cache_info().hits == frames.hits + 1  # parsed at write time, not now
        await stage.prepare_question("怎么修改登录密码？")  # not English: nothing to prepare
        assert stage.checks.batch.jobs == 1
    finally:
        await stage.stop()
