"""The lean English pipeline (`gateway.semantic.lean_spacy`) parses as spaCy's ordinary load does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gateway.semantic import structure

from ._helpers import eval_questions

_ATTRS = """
def attrs(doc):
    return [[t.text, t.pos_, t.tag_, t.dep_, t.head.i, t.lemma_, str(t.morph), t.norm_, t.shape_, t.is_stop,
             t.like_num, t.lemma, t.norm] for t in doc]
"""

_ORDINARY = _ATTRS + """
import json, sys
import spacy
nlp = spacy.load(sys.argv[1], exclude=["ner", "senter"])
print(json.dumps([attrs(d) for d in nlp.pipe(json.load(sys.stdin), batch_size=64)]))
"""



def test_lean_pipeline_parses_every_eval_question_as_the_ordinary_load() -> None:
    pytest.importorskip(structure.EN_MODEL)
    texts = [*eval_questions(), "Don't you ain't gonna 'cause ya'll ¯\\_(ツ)_/¯ e-mail it 2x @bob #tag https://x.y/z?"]
    assert len(texts) > 5000
    done = subprocess.run([sys.executable, "-c", _ORDINARY, structure.EN_MODEL], input=json.dumps(texts),
                          capture_output=True, text=True, timeout=600, check=True)
    want = json.loads(done.stdout)
    nlp = structure._spacy()
    assert nlp is not None and len(nlp.vocab.strings) < 60_000  # the packaged table was not read
    scope: dict[str, object] = {}
    exec(_ATTRS, scope)  # the same attribute list as the other process
    got = json.loads(json.dumps([scope["attrs"](d) for d in nlp.pipe(texts, batch_size=64)]))  # type: ignore[operator]
    assert [t for t, g, w in zip(texts, got, want, strict=True) if g != w] == []


def test_labels_are_in_the_string_table_without_the_packaged_one() -> None:
    pytest.importorskip(structure.EN_MODEL)
    nlp = structure._spacy()
    strings = nlp.vocab.strings
    for name in ("tagger", "parser"):
        assert all(label in strings for label in nlp.get_pipe(name).labels), name
    index = nlp.get_pipe("lemmatizer").lookups.get_table("lemma_index")
    assert all(not isinstance(forms, list) for forms in index.values())
    assert "be" in index.get("verb") and "zzzz" not in index.get("verb")
