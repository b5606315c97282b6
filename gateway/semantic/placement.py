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

A third, tagger-free reading covers what the tags miss (a Chinese noun the tagger gives no verb, an
event order `先冷冻再发货` / `先发货再冷冻`, `cash instead of card` / `card instead of cash`): the same
sequence of words with two stretches of it *exchanged* around a nonempty middle (`P X M Y S` /
`P Y M X S`). A middle that coordinates (`和`, `还是`, `and`, `or`, `with`: `A和B有什么区别` /
`B和A…`) makes the exchange symmetric, and an empty one is a clause moved (`If it rains, can we…` /
`Can we… if it rains?`): neither is a contradiction. An English middle that holds a verb besides its
coordinator, between two stretches with none, does not coordinate them: they modify different verbs
(`order online and pay in store` / `order in store and pay online`).

A contradiction is two words that trade places (w1 the doer of V and w2 of W on one side, the
other way round on the other), or each side negating a word the other says without negating it.
Both must be exact, so a misspelt or reworded verb (which renames a place for every word at once) is
no contradiction. Word order alone (a conditional clause moved to the front, a passive) keeps every
place. Third-person pronouns (`it`, `they`) are left out: what they stand for is not known here.
Without a parser the check finds nothing (the other checks still run). The Chinese readings (from
jieba's tags and characters) are `placement_zh`'s; this module holds the English ones and the
comparisons, which are the same for both languages.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from gateway.semantic import placement_zh, structure
from gateway.semantic.align import prefix_variant
from gateway.semantic.lexical import stem

# (negation scopes, word → its places, every word said: lemmas in English, characters and words in
# Chinese, the question's sequence of units: (unit, a content unit?, starts a word?), the units the
# parse reads as verbs: English only, Chinese units being characters)
Unit = tuple[str, bool, bool]
Places = tuple[frozenset[str], dict[str, frozenset[str]], frozenset[str], tuple[Unit, ...], frozenset[str]]

_EN_PERSONS = {"i": "i", "me": "i", "myself": "i", "we": "we", "us": "we", "you": "you", "yourself": "you"}
_EN_POSSESSIVES = {"my": "i", "our": "we", "your": "you"}
# the Chinese reading, under its former name here (`places` and the tests read it)
_zh_places = placement_zh.places


def moved(cached: str, query: str, lang: str) -> bool:
    """True when the two questions place shared words differently (see the module docstring)."""
    if cached == query:
        return False
    a, b = places(cached, lang), places(query, lang)
    if a is None or b is None:
        return False
    return (_negation_moved(a, b) or _exchanged(a[1], b[1]) or _doer_replaced(a[1], b[1])
            or _owner_moved(a[1], b[1])
            or _stretches_exchanged(a[3], _derived_as(b[3], a[3]) if lang == "en" else b[3], lang, a[4]))


def _derived_as(units: Sequence[Unit], other: Sequence[Unit]) -> tuple[Unit, ...]:
    """`units` with each word the other question lacks written as the other's word it derives from or
    to, by the aligner's prefix rule on the stems (`vaccinate` / `vaccine`: `vaccinat` / `vaccin`), so
    that a verb and a noun of the same root exchanged between two places (`deworm … before the vaccine` /
    `vaccinate … before the deworming`) are seen as an exchange."""
    mine, theirs = {u[0] for u in units}, {u[0] for u in other}
    spare = sorted(theirs - mine)
    out: list[Unit] = []
    for word, content, starts in units:
        if word not in theirs:
            word = next((w for w in spare if prefix_variant(w, word)), word)
        out.append((word, content, starts))
    return tuple(out)


# A middle with one of these between two exchanged stretches coordinates them: the order is free
# (`but`: two statements joined, `the cleaner did not come but I was charged` either way round;
# a negation moved across `but not` is `_negation_moved`'s). Chinese's are `placement_zh`'s.
_EN_SYMMETRIC = frozenset("and or nor with between versus vs but yet".split())  # noqa: SIM905


def _stretches_exchanged(a: Sequence[Unit], b: Sequence[Unit], lang: str,
                         verbs: frozenset[str] = frozenset()) -> bool:
    """`P X M Y S` on one side, `P Y M X S` on the other, with X and Y different, each holding a
    content unit, every stretch whole words on one side at least (a Chinese stretch cut inside a word on
    both, `还|是`, is no stretch), and M nonempty and not coordinating (see the module docstring)."""
    n = len(a)
    if n != len(b) or n > 64:  # past that, the pair is left to the other checks (bounded time)
        return False
    ua, ub = [u[0] for u in a], [u[0] for u in b]
    if ua == ub or sorted(ua) != sorted(ub):
        return False
    pre = next((i for i in range(n) if ua[i] != ub[i]), n)
    suf = next((i for i in range(n) if ua[n - 1 - i] != ub[n - 1 - i]), n)
    # One reading of the pair as two coordinated stretches exchanged (`a checking account and a savings
    # account` / `a savings account and a checking account`) explains it, whatever other cuts find.
    found = False
    for i in range(pre + 1):  # X starts at i, inside or at the end of the common beginning
        for end in range(max(i + 3, n - suf), n + 1):  # Y ends at `end`
            # X: A's window begins with what B's ends with; Y: A's ends with what B's begins with
            xs = [lx for lx in range(1, end - i - 1) if ua[i:i + lx] == ub[end - lx:end]]
            ys = [ly for ly in range(1, end - i - 1) if ua[end - ly:end] == ub[i:i + ly]] if xs else []
            for lx in xs:
                for ly in ys:
                    j, k = i + lx, end - ly
                    if j < k and ua[i:j] != ua[k:end] and ua[j:k] == ub[i + ly:end - lx]:
                        cut = _exchange(a, b, i, j, k, end, lang, verbs)
                        if cut == "coordinated":
                            return False
                        found = found or cut == "exchanged"
    return found


def _exchange(a: Sequence[Unit], b: Sequence[Unit], i: int, j: int, k: int, end: int, lang: str,
              verbs: frozenset[str]) -> str:
    """X = a[i:j], M = a[j:k], Y = a[k:end], exchanged in b: "" when the cut does not count (X or Y
    without a content unit, or a stretch cut inside words on both sides, where one sentence's
    segmentation may err and the other's not), "coordinated" when M coordinates X and Y, else
    "exchanged". A coordinator does not coordinate X and Y when the middle also holds a verb and
    neither stretch does (`order online and pay in store` / `order in store and pay online`: the two
    stretches modify different verbs); two clauses exchanged around it are coordinated (`does the
    cleaner bring the vacuum or do I provide it`, either way round)."""
    n, ly, lm = len(a), end - k, k - j

    def whole(units: Sequence[Unit], start: int, stop: int) -> bool:
        return units[start][2] and (stop == n or units[stop][2])

    if not (any(u[1] for u in a[i:j]) and any(u[1] for u in a[k:end])):
        return ""
    if not ((whole(a, i, j) or whole(b, i + ly + lm, end)) and (whole(a, j, k) or whole(b, i + ly, i + ly + lm))
            and (whole(a, k, end) or whole(b, i, i + ly))):
        return ""
    if not (_coordinates(a[j:k], lang) or _coordinates(b[i + ly:i + ly + lm], lang)):
        return "exchanged"
    if any(u[0] in verbs for u in a[j:k]) and not any(u[0] in verbs for u in (*a[i:j], *a[k:end])):
        return "exchanged"
    return "coordinated"


def _coordinates(middle: Sequence[Unit], lang: str) -> bool:
    """A coordinating word in the middle: English words; Chinese words as the segmenter cut them
    (`和` coordinates, the `同` of `同意` does not)."""
    if lang == "en":
        return any(u[0] in _EN_SYMMETRIC for u in middle)
    return placement_zh.coordinates(middle)


def _negation_moved(a: Places, b: Places) -> bool:
    """Each side negates a word the other says without negating it (`ironed but not washed` /
    `washed but not ironed`). A word found on one side only (a typo, a synonym) proves nothing."""
    (neg_a, _, words_a, *_), (neg_b, _, words_b, *_) = a, b
    if not neg_a or not neg_b or neg_a == neg_b:
        return False
    # one segmentation's `没休|完` is another's `没|休完`: scopes one inside the other are one scope
    only_a = {x for x in neg_a if not any(x in y or y in x for y in neg_b)}
    only_b = {y for y in neg_b if not any(x in y or y in x for x in neg_a)}
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


# `what is X` / `how long is Y covered`: the subject of a copula is what is asked about, not a doer
_COPULAS = frozenset({"be", "have", "do", "get", "是", "有"})


def _doer_replaced(args_a: dict[str, frozenset[str]], args_b: dict[str, frozenset[str]]) -> bool:
    """The same action done by another party that both questions name (`can the driver leave my
    laundry …` / `can I leave my laundry … for the driver`): w1 its subject on one side only, w2 on the
    other side only, and each of them has a place on both sides (both are in both questions' parses).
    Copulas and light verbs aside."""
    verbs = {p for places in (*args_a.values(), *args_b.values()) for p in places
             if p.startswith("subj:") and p[5:] not in _COPULAS}
    for p in verbs:
        was = {w for w, places in args_a.items() if p in places and w in args_b and p not in args_b[w]}
        now = {w for w, places in args_b.items() if p in places and w in args_a and p not in args_a[w]}
        if was and now and was != now:
            return True
    return False


def _owner_moved(args_a: dict[str, frozenset[str]], args_b: dict[str, frozenset[str]]) -> bool:
    """A possessor that owns one thing on one side and another on the other, both things named in both
    questions (`my neighbor's tree … my house` / `my tree … my neighbor's house`). Persons aside: with
    the `'s` gone, `my` hangs on the compound's head (`my neighbor tree`), not on `neighbor`."""
    for w in args_a.keys() & args_b.keys() - set(_EN_PERSONS.values()):
        was = {p[5:] for p in args_a[w] - args_b[w] if p.startswith("poss:")}
        now = {p[5:] for p in args_b[w] - args_a[w] if p.startswith("poss:")}
        if any(h in args_b for h in was if h in args_a) and any(h in args_a for h in now if h in args_b):
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
            neg.update(_negated(t))
            continue
        word = _en_word(t) or (_EN_POSSESSIVES.get(t.lower_) if t.dep_ == "poss" else None)
        if word is None:
            continue
        head = t.head
        if t.dep_ == "nsubj":
            args[word].add(f"subj:{head.lemma_.lower()}")
            for verb in _controlled(head):  # `do I have to pack …`: I pack
                args[word].add(f"subj:{verb.lemma_.lower()}")
        elif t.dep_ in ("nsubjpass", "dobj"):
            args[word].add(f"obj:{head.lemma_.lower()}")
        elif t.dep_ in ("poss", "compound") and head.pos_ in ("NOUN", "PROPN"):
            # `my neighbor's tree` / `my tree … my neighbor's house`: whose thing (the text compared
            # has lost the `'s`, so the parser reads `neighbor tree` as a compound)
            args[word].add(f"poss:{head.lemma_.lower()}")
        elif t.dep_ == "pobj" and head.dep_ == "agent":  # `changed by my partner`: the doer
            args[word].add(f"subj:{head.head.lemma_.lower()}")
        elif t.dep_ == "pobj":
            args[word].add(f"{head.lemma_.lower()}:{head.head.lemma_.lower()}")
    said = frozenset(t.lemma_.lower() for t in doc) | frozenset(t.lower_ for t in doc)
    verbs = frozenset(_en_unit_word(t) for t in doc if t.pos_ == "VERB")
    return frozenset(neg), {w: frozenset(p) for w, p in args.items()}, said, _en_units(doc), verbs


_EN_FUNCTION_POS = frozenset({"DET", "ADP", "CCONJ", "SCONJ", "PART", "AUX", "PUNCT", "SPACE", "SYM"})


def _en_units(doc: Any) -> tuple[Unit, ...]:
    """The question's words in order, articles and punctuation left out: persons by their person
    (`me` / `I`), other words by the stem of what is written (`provides` / `provide`), not by the
    tagger's lemma: the tagger may read the same word as a verb in one sentence and a noun in the
    other (`My dog bit …` / `… cat bit my dog`: `bit` NOUN, then VERB `bite`)."""
    out: list[Unit] = []
    for t in doc:
        if t.pos_ in ("PUNCT", "SPACE") or t.lower_ in ("a", "an", "the"):
            continue
        word = _en_unit_word(t)
        content = t.pos_ not in _EN_FUNCTION_POS and (t.pos_ != "PRON" or t.lower_ in _EN_PERSONS)
        out.append((word, content, True))
    return tuple(out)


def _en_unit_word(t: Any) -> str:
    return _EN_PERSONS.get(t.lower_) or stem(t.lower_)


def _negated(negator: Any) -> set[str]:
    """What a negation attaches to, with the words coordinated with it that share its subject
    (`never ruled or occupied` negates both). A noun head right after an auxiliary is the parser
    hanging it on the subject (`doesn't Microsoft Word open`): the verb above it is meant (`but not
    texts` negates the noun)."""
    head = negator.head
    after_aux = negator.i > 0 and negator.doc[negator.i - 1].pos_ == "AUX"
    if after_aux and head.pos_ in ("NOUN", "PROPN") and head.head.pos_ in ("VERB", "AUX"):
        head = head.head
    out = {head.lemma_.lower()}
    for c in head.children:
        # a conjunct with a subject of its own is another clause (`did not show up but the booking
        # was charged`), and `but` contrasts what it joins
        if c.dep_ == "conj" and not any(k.dep_ in ("nsubj", "nsubjpass") for k in c.children) \
                and not any(k.dep_ == "cc" and k.lower_ in ("but", "yet") for k in head.children):
            out.add(c.lemma_.lower())
    return out


def _controlled(head: Any) -> list[Any]:
    """The verbs whose subject is `head`'s (`have to pack`, `want to try`, `need to be able to
    cancel`: open clausal complements, followed down)."""
    out: list[Any] = []
    todo = [c for c in head.children if c.dep_ == "xcomp"]
    while todo:
        verb = todo.pop()
        out.append(verb)
        todo.extend(c for c in verb.children if c.dep_ == "xcomp")
    return out


def _en_word(t: Any) -> str | None:
    if t.pos_ in ("NOUN", "PROPN"):
        return str(t.lemma_.lower())
    if t.pos_ == "PRON":
        return _EN_PERSONS.get(t.lower_)  # third-person pronouns: referent unknown
    return None

