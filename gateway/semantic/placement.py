"""Where the shared words sit: the same content words in other places can ask another question.

The same-content lane serves a pair whose content words all match, but the same words can be
arranged into another question: a negation moved to the other verb (`ironed but not washed` /
`washed but not ironed`, `只熨烫不洗` / `只洗不熨烫`), or two nouns exchanged between clauses (`Does the
owner get notified when a member connects?` / `Does a member get notified when the owner
connects?`). This module reads, from each question's structure, two kinds of placement facts and
reports a pair whose facts contradict each other:

- *negation scope*: the word each negator attaches to (English: spaCy's `neg` arc to its head;
  Chinese: the word a negator precedes, with the noun right after it when there is one);
- *argument places*: for each noun or person, the verbs it is the subject or the object of (English:
  the dependency parse, passives turned active, `by X` as the doer, prepositional objects by their
  preposition; Chinese: word order from jieba's tagger, the noun before a verb as its doer, the noun
  right after it as what it acts on, `X被Y V` as Y doing V to X).

A contradiction is two words that trade places (w1 the doer of V and w2 of W on one side, the
other way round on the other), or each side negating a word the other says without negating it.
Both must be exact, so a misspelt or reworded verb (which renames a place for every word at once) is
no contradiction. Word order alone (a conditional clause moved to the front, a passive) keeps every
place. Third-person pronouns (`it`, `they`) are left out: what they stand for is not known here.
Without a parser the check finds nothing (the other checks still run).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from gateway.semantic import structure
from gateway.semantic.lexicon import ZH_NEGATORS, ZH_STOP

# (negation scopes, word → its places, every word said: lemmas in English, characters and words in Chinese)
Places = tuple[frozenset[str], dict[str, frozenset[str]], frozenset[str]]

_EN_PERSONS = {"i": "i", "me": "i", "myself": "i", "we": "we", "us": "we", "you": "you", "yourself": "you"}
_ZH_PERSONS = {"我": "我", "我们": "我们", "你": "你", "您": "你", "你们": "你们"}


def moved(cached: str, query: str, lang: str) -> bool:
    """True when the two questions place shared words differently (see the module docstring)."""
    if cached == query:
        return False
    a, b = places(cached, lang), places(query, lang)
    if a is None or b is None:
        return False
    return _negation_moved(a, b) or _exchanged(a[1], b[1])


def _negation_moved(a: Places, b: Places) -> bool:
    """Each side negates a word the other says without negating it (`ironed but not washed` /
    `washed but not ironed`). A word found on one side only (a typo, a synonym) proves nothing."""
    (neg_a, _, words_a), (neg_b, _, words_b) = a, b
    if not neg_a or not neg_b or neg_a == neg_b:
        return False
    only_a, only_b = neg_a - neg_b, neg_b - neg_a
    return (any(_said(x, words_b) for x in only_a) and any(_said(y, words_a) for y in only_b))


def _said(scope: str, words: frozenset[str]) -> bool:
    return all(part in words for part in scope.split("+"))


def _exchanged(args_a: dict[str, frozenset[str]], args_b: dict[str, frozenset[str]]) -> bool:
    """Two words that trade places: w1 holds place p and w2 place q on one side, w1 holds q and w2
    holds p on the other. An exact exchange, so a place named after a misspelt or reworded verb (which
    moves every word at once) is no exchange."""
    shared = [w for w in args_a if w in args_b]
    for w1, w2 in itertools.permutations(shared, 2):
        a1, a2, b1, b2 = args_a[w1], args_a[w2], args_b[w1], args_b[w2]
        if any(p not in a2 and p not in b1 for p in a1 & b2) and any(q not in a1 and q not in b2 for q in a2 & b1):
            return True
    return False


@lru_cache(maxsize=8192)
def places(text: str, lang: str) -> Places | None:
    """The question's negation scopes and argument places, or None when no parser serves `lang`."""
    if lang == "en":
        doc = structure.parsed(text)
        return None if doc is None else _en_places(doc)
    if lang == "zh":
        tagged = structure.zh_tagged(text)
        return None if tagged is None else _zh_places(tagged)
    return None


def _en_places(doc: Any) -> Places:
    neg: set[str] = set()
    args: dict[str, set[str]] = defaultdict(set)
    for t in doc:
        if t.dep_ == "neg":
            neg.add(t.head.lemma_.lower())
            continue
        word = _en_word(t)
        if word is None:
            continue
        head = t.head
        if t.dep_ == "nsubj":
            args[word].add(f"subj:{head.lemma_.lower()}")
        elif t.dep_ in ("nsubjpass", "dobj"):
            args[word].add(f"obj:{head.lemma_.lower()}")
        elif t.dep_ == "pobj" and head.dep_ == "agent":  # `changed by my partner`: the doer
            args[word].add(f"subj:{head.head.lemma_.lower()}")
        elif t.dep_ == "pobj":
            args[word].add(f"{head.lemma_.lower()}:{head.head.lemma_.lower()}")
    said = frozenset(t.lemma_.lower() for t in doc) | frozenset(t.lower_ for t in doc)
    return frozenset(neg), {w: frozenset(p) for w, p in args.items()}, said


def _en_word(t: Any) -> str | None:
    if t.pos_ in ("NOUN", "PROPN"):
        return str(t.lemma_.lower())
    if t.pos_ == "PRON":
        return _EN_PERSONS.get(t.lower_)  # third-person pronouns: referent unknown
    return None


def _zh_places(tagged: Sequence[tuple[str, str]]) -> Places:
    neg: set[str] = set()
    args: dict[str, set[str]] = defaultdict(set)
    n = len(tagged)

    def noun(i: int) -> str | None:
        word, flag = tagged[i]
        if word in _ZH_PERSONS:
            # `我的X` names a thing, not a party
            return None if i + 1 < n and tagged[i + 1][0] == "的" else _ZH_PERSONS[word]
        return word if flag.startswith("n") and word not in ZH_STOP else None

    def verb_run(i: int) -> int | None:
        """The last verb of the verb run starting at i (`能 修改` → 修改), skipping adverbs first."""
        while i < n and tagged[i][1].startswith("d") and tagged[i][0] not in ZH_NEGATORS:
            i += 1
        if i >= n or not tagged[i][1].startswith("v"):
            return None
        while i + 1 < n and tagged[i + 1][1].startswith("v"):
            i += 1
        return i

    def verb_key(i: int) -> str:
        # a negated verb is another place: `包含窗户但不包含阳台` puts 阳台 under `不包含`
        negated = i > 0 and tagged[i - 1][0] in ZH_NEGATORS
        return ("不" if negated else "") + tagged[i][0]

    for i, (word, _flag) in enumerate(tagged):
        for negator in ZH_NEGATORS:
            if word.startswith(negator):
                rest = word[len(negator):]
                j = i + 1
                if not rest:  # the negator stands alone: it scopes over the next content word
                    while j < n and (tagged[j][0] in ZH_STOP or tagged[j][1] == "x"):
                        j += 1
                    rest, j = (tagged[j][0], j + 1) if j < n else ("", j)
                if rest:
                    after = noun(j) if j < n else None
                    neg.add(rest + (f"+{after}" if after else ""))
                break
        w = noun(i)
        if w is None:
            continue
        if i + 1 < n and tagged[i + 1][0] == "被":  # `X被Y V`: Y does V to X
            j = i + 2
            while j < n and noun(j) is not None:
                j += 1
            v = verb_run(j) if j < n else None
            if v is not None:
                args[w].add(f"obj:{verb_key(v)}")
                for k in range(i + 2, j):
                    if (doer := noun(k)) is not None:
                        args[doer].add(f"subj:{verb_key(v)}")
            continue
        v = verb_run(i + 1) if i + 1 < n else None
        if v is not None:
            args[w].add(f"subj:{verb_key(v)}")
        if i > 0 and tagged[i - 1][1].startswith("v"):
            args[w].add(f"obj:{verb_key(i - 1)}")
    text = "".join(word for word, _ in tagged)
    said = frozenset(word for word, _ in tagged) | frozenset(
        text[i:j] for i in range(len(text)) for j in range(i + 1, min(len(text), i + 4) + 1))
    return frozenset(neg), {w: frozenset(p) for w, p in args.items()}, said
