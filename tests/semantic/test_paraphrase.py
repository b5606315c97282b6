"""The reworded lane's second opinion: MiniLM (int8 ONNX) for English, USE's cosine for Chinese."""

from __future__ import annotations

import pytest

from gateway.semantic import paraphrase, structure


def test_minilm_scores_paraphrases_above_same_topic_questions() -> None:
    base = "How do I change the language of the mobile app?"
    para = paraphrase.score(base, "The mobile app is in the wrong language, how can I change it?", "en", 0.0)
    other = paraphrase.score(base, "Why does the mobile app crash when I change the language?", "en", 0.0)
    assert para is not None and other is not None and para > 0.85 > other
    vec = paraphrase.vector(base)
    assert vec is not None and vec.shape == (384,) and abs(float(vec @ vec) - 1.0) < 1e-4


def test_confident_needs_the_bar_and_the_structure() -> None:
    a = "How do I change the language of the mobile app?"
    b = "The mobile app is in the wrong language, how can I change it?"
    assert paraphrase.confident(a, b, "en", 0.9, 0.80, 0.84)
    assert not paraphrase.confident(a, b, "en", 0.9, 2.0, 0.84)  # above 1: evidence only
    assert not paraphrase.confident("I forgot my password, how do I reset it?", "How do I reset my username?",
                                    "en", 0.9, 0.5, 0.84)  # high enough, but another object
    assert paraphrase.score("怎么改密码？", "密码怎么改？", "zh", 0.91) == pytest.approx(0.91)  # USE's own cosine
    assert not paraphrase.confident("怎么改密码？", "密码怎么改？", "zh", 0.80, 0.80, 0.84)
    assert paraphrase.score("a", "b", "mixed", 0.9) is None


def test_a_very_confident_english_pair_need_not_link_its_verbs() -> None:
    a, b = "How do I activate the dark theme in the web app?", "In the web app, how can I turn on the dark theme?"
    assert structure.agree(a, b, "en") is False  # `activate` / `turn on`: no general resource links them
    assert not paraphrase.confident(a, b, "en", 0.9, 0.75, 0.84)  # by default the verbs must be linked
    assert paraphrase.confident(a, b, "en", 0.9, 0.75, 0.84, 0.90)  # MiniLM ≈ 0.95: the objects suffice
    other = "How do I report a bug in the dark theme of the web app?"  # the same object, another verb
    assert not paraphrase.confident(a, other, "en", 0.9, 0.75, 0.84, 0.90)  # MiniLM ≈ 0.65: below the bar
    swapped = ("Can I bring my dog to the office?", "Can my dog bring me to the office?")  # MiniLM ≈ 0.97
    assert not paraphrase.confident(*swapped, "en", 0.9, 0.75, 0.84, 0.90)  # roles still count


def test_without_the_model_english_waits_for_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paraphrase, "_model", None)
    monkeypatch.setattr(paraphrase, "_failed", True)  # as when the package is not installed
    paraphrase.vector.cache_clear()
    try:
        assert paraphrase.score("How do I log in?", "How can I sign in?", "en", 0.9) is None
        assert not paraphrase.confident("How do I log in?", "How can I sign in?", "en", 0.9, 0.5, 0.5)
    finally:
        paraphrase.vector.cache_clear()


def test_batches_free_their_activations() -> None:
    """The session runs without onnxruntime's memory arena (which would keep the largest batch's
    activations for good), and a batch gives each question the vector it gets alone."""
    import numpy as np

    model = paraphrase._load_model()
    if model is None:
        pytest.skip("MiniLM not installed")
    assert model[0].get_session_options().enable_cpu_mem_arena is False
    texts = ["How do I reset my password?", "What is the refund policy for annual plans in the EU?" * 3]
    together = paraphrase.encode(texts)
    assert together is not None
    for i, text in enumerate(texts):
        alone = paraphrase.encode([text])
        assert alone is not None and np.allclose(alone[0], together[i], atol=1e-5)
