"""The compact tables answer exactly what the libraries answer (`gateway.semantic.lean_tables`)."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from importlib import resources

import pytest

from gateway.semantic import lean_tables
from gateway.semantic.align import homophones, lemmas, synonyms

from ._helpers import eval_questions

_READINGS = """
import json, sys
from pypinyin import Style, pinyin, pinyin_dict
chars = sorted(pinyin_dict.pinyin_dict)
print(json.dumps({k: sorted(pinyin(chr(k), heteronym=True, style=Style.NORMAL)[0]) for k in chars}))
"""


def test_single_character_readings_match_pypinyin_with_its_phrase_table() -> None:
    """Every character of pypinyin's table, against pypinyin imported the ordinary way (phrases and all),
    in a process of its own (this one may already hold the lean import)."""
    pytest.importorskip("pypinyin")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPINYIN_")}
    done = subprocess.run([sys.executable, "-c", _READINGS], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    full = json.loads(done.stdout)
    assert len(full) > 40_000
    mismatched = [k for k, want in full.items() if sorted(lean_tables.readings(chr(int(k))) or ()) != want]
    assert mismatched == []
    assert "PYPINYIN_NO_PHRASES" not in os.environ  # set for the import only
    assert homophones("帐", "账") and not homophones("年", "病")


def test_noun_and_verb_lemmas_match_lemminflect() -> None:
    lemminflect = pytest.importorskip("lemminflect")
    from lemminflect import config
    from lemminflect.codecs.LemmaLUCodec import LemmaLUCodec
    from lemminflect.codecs.OverridesCodec import OverridesCodec

    words = sorted(LemmaLUCodec.load(config.lemma_lu_fn))
    sample = random.Random(5).sample(words, 3000) + sorted(OverridesCodec.load(config.lemma_overrides_fn))
    sample += ["zzyzx", "", "Running", "BOUGHT", "Movies", "'d"]
    for word in sample:
        for form in (word, word.capitalize(), word.upper()):
            found = lemminflect.getAllLemmas(form)
            want = frozenset(lemma for pos in ("NOUN", "VERB") for lemma in found.get(pos, ()))
            assert lean_tables.noun_verb_lemmas(form) == want, form
    assert lemmas("bought") == {"buy"} and "movie" in lemmas("movies")


def test_wordnet_senses_keep_every_lemmas_synsets() -> None:
    raw = resources.files("gateway.semantic").joinpath("data/wordnet_synsets.tsv.gz").read_bytes()
    table: dict[str, set[str]] = {}
    for line in gzip.decompress(raw).decode("utf-8").splitlines():
        lemma, pos, offsets = line.split("\t")
        table.setdefault(lemma, set()).update(pos + o for o in offsets.split(","))
    senses = lean_tables.wordnet_senses()
    assert len(senses) == len(table)
    for lemma, want in table.items():
        assert lemma in senses and len(senses.get(lemma)) == len(want), lemma
    # the numbers stand for the names one to one: each synset groups the same lemmas under either
    by_code: dict[int, set[str]] = {}
    for lemma in table:
        for code in senses.get(lemma):
            by_code.setdefault(code, set()).add(lemma)
    by_name: dict[str, set[str]] = {}
    for lemma, want in table.items():
        for name in want:
            by_name.setdefault(name, set()).add(lemma)
    assert sorted(map(sorted, by_code.values())) == sorted(map(sorted, by_name.values()))
    assert senses.get("no such lemma") == frozenset()
    assert synonyms("movie", "film") and not synonyms("movie", "password")


_JIEBA_TAGS = """
import json, sys
import jieba, jieba.posseg as pseg
jieba.setLogLevel(30)
texts = json.load(sys.stdin)
print(json.dumps([[[w.word, w.flag] for w in pseg.cut(t)] for t in texts], ensure_ascii=False))
"""



def test_jieba_tags_match_jiebas_own_load_on_every_eval_question() -> None:
    """The compact word → tag table tags every question of the eval sets (English ones too: jieba
    meets mixed text) exactly as jieba loaded the ordinary way, in a process of its own."""
    pytest.importorskip("jieba")
    texts = eval_questions()
    assert len(texts) > 5000
    done = subprocess.run([sys.executable, "-c", _JIEBA_TAGS], input=json.dumps(texts), capture_output=True,
                          text=True, timeout=300, check=True)
    want = json.loads(done.stdout)
    pseg = lean_tables.jieba_posseg()
    got = [[[w.word, w.flag] for w in pseg.cut(t)] for t in texts]
    assert [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w] == []
    assert len(pseg.dt.word_tag_tab) > 300_000 and pseg.dt.word_tag_tab["密码"] == "n"


def test_jieba_tables_are_one_compact_table() -> None:
    pytest.importorskip("jieba")
    pseg = lean_tables.jieba_posseg()
    assert pseg is lean_tables.jieba_posseg()  # loaded once
    freq, tags = pseg.dt.tokenizer.FREQ, pseg.dt.word_tag_tab
    assert freq.table is tags.table and len(tags) > 300_000
    assert freq.get("密码") > 0 and freq["密码"] == freq.get("密码") and "密码" in freq
    assert freq.get("no such word") is None and freq.get("no such word", 7) == 7 and "密" + "x" not in tags
    assert tags["密码"] == "n" and tags.get("no such word", "x") == "x"
    with pytest.raises(KeyError):
        tags["no such word"]


_JIEBA_DAGS = """
import json, random, sys
import jieba
jieba.setLogLevel(30)
jieba.dt.check_initialized()
words = sorted(w for w, f in jieba.dt.FREQ.items() if f)
rng = random.Random(7)
texts = json.load(sys.stdin)
# dictionary words run together, cut short and mixed with Latin text: walks of every length
texts += ["".join(rng.sample(words, 4))[rng.randrange(3):] + rng.choice(["", "abc", "12"]) for _ in range(3000)]
import jieba.posseg as pseg
tags = pseg.dt.word_tag_tab
sample = rng.sample(sorted(tags), 20000) + [t[i:i + 2] for t in texts[-300:] for i in range(6)]
print(json.dumps({"texts": texts, "dags": [jieba.dt.get_DAG(t) for t in texts], "total": jieba.dt.total,
                  "freq": {w: jieba.dt.FREQ.get(w) for w in sample}, "tags": {w: tags.get(w) for w in sample},
                  "n_tags": len(tags)}, ensure_ascii=False))
"""


def test_jieba_dag_and_frequencies_match_jiebas_own_prefix_dict() -> None:
    """`get_DAG` over the compact tables (`compact.WordTable`, prefixes in a filter) builds jieba's DAG
    for every eval question and for 3,000 runs of dictionary words; the frequencies `calc` reads agree
    (a prefix and an absent string read the same: 0 or None, both `or 1`), and so do the tags."""
    pytest.importorskip("jieba")
    texts = eval_questions()
    done = subprocess.run([sys.executable, "-c", _JIEBA_DAGS], input=json.dumps(texts), capture_output=True,
                          text=True, timeout=300, check=True)
    want = json.loads(done.stdout)
    pseg = lean_tables.jieba_posseg()
    dt = pseg.dt.tokenizer
    got = [{str(k): v for k, v in dt.get_DAG(t).items()} for t in want["texts"]]
    assert [t for t, g, w in zip(want["texts"], got, want["dags"], strict=True) if g != w] == []
    assert dt.total == want["total"]
    assert {w: dt.FREQ.get(w) or 0 for w in want["freq"]} == {w: f or 0 for w, f in want["freq"].items()}
    assert {w: pseg.dt.word_tag_tab.get(w) for w in want["tags"]} == want["tags"]
    assert len(pseg.dt.word_tag_tab) == want["n_tags"]
