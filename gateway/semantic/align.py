"""Aligns two analysed questions: which content tokens have a counterpart on the other side.

A counterpart is the same (stemmed) token, or one the guard can explain as a different spelling of
the same word: a misspelling (edit distance 1, 2 for long words, where one side is not an English
word), a clipped form (`prod` / `production`, `notifs` / `notifications`), or an acronym of a run of
words on the other side (`SSO` / `single sign-on`); a Chinese character for one that sounds the same,
in place or inside a function word (`怎么办` typed `怎么半`). Everything else that is left over is a change
of content, and the structure of the changes (one slot swapped in an otherwise identical question,
or a reworded question) is what the guard judges.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache

from gateway.semantic.lean_tables import noun_verb_lemmas, readings
from gateway.semantic.lexical import Analysis, Token, damerau1
from gateway.semantic.lexicon import english_words, known_word, wordnet_senses


@dataclass(slots=True)
class Alignment:
    unmatched_a: list[Token]  # content tokens of A with no counterpart in B
    unmatched_b: list[Token]
    matched: int  # content tokens matched (counted on A's side)
    ratio: float  # difflib ratio of the two token sequences, counterparts made equal
    changed_blocks: int  # diff blocks that contain a content change


@lru_cache(maxsize=65536)
def same_word(a: Token, b: Token) -> bool:
    """True when `a` and `b` are the same word spelled differently (never for numbers or Chinese)."""
    if a.text == b.text:
        return True
    if a.number or b.number or a.han or b.han:
        return False
    x, y = a.raw, b.raw
    if not (x.isalpha() and y.isalpha()):
        return False
    for u, v in ((x, y), (a.text, b.text)):
        short, long_ = (u, v) if len(u) <= len(v) else (v, u)
        if len(short) >= 3 and len(long_) - len(short) >= 2 and long_.startswith(short):
            return True  # a clipped form: prod/production, notifs/notifications
    if lemmas(x) & lemmas(y):
        return True  # one noun or verb inflected: movies/movie, bought/buy, booking/book
    if synonyms(x, y):
        return True  # WordNet: the two share a synset among their most frequent senses
    if prefix_variant(x, y):
        return True  # germany/german, emails/email
    short = x if len(x) <= len(y) else y
    if contracted(x, y) or contracted(y, x):
        return True  # appt/appointment, acct/account, hrs/hours
    if len(short) >= 3 and abs(len(x) - len(y)) <= 1:
        words = english_words()
        if x in words and y in words:
            return False  # two real words (`sick`/`sock`) are never one misspelt
        if len(short) == 3:  # only a swap of two letters: VNP/VPN, not SMS/SMB
            return len(x) == len(y) and sorted(x) == sorted(y) and sum(p != q for p, q in zip(x, y, strict=True)) == 2
        limit = 2 if len(short) >= 8 else 1
        edits = damerau1(x, y)
        if edits == 2 and lemmas(x) and lemmas(y):
            # two edits apart and both in LemmInflect's lexicon (`medicare`/`medicaid`, beyond the word
            # list): two words, not one misspelt (one edit stays a slip: `loosing`/`losing`)
            return False
        return edits <= limit
    return False


def prefix_variant(x: str, y: str) -> bool:
    """One word begins with the other, the shorter of five letters or more (`germany` / `german`)."""
    return min(len(x), len(y)) >= 5 and (x.startswith(y) or y.startswith(x))


def contracted(short: str, long_: str) -> bool:
    """An abbreviation by contraction (`appt` / `appointment`, `acct` / `account`, `svc` / `service`,
    `hrs` / `hours`): three to five letters no dictionary here knows, the long word's first letter
    first and every letter in the long word's order, the long word at least two letters longer."""
    if not 3 <= len(short) <= 5 or len(long_) < len(short) + 2 or short[0] != long_[0]:
        return False
    if known_word(short) or long_ not in english_words():
        return False
    rest = iter(long_[1:])
    return all(c in rest for c in short[1:])


@lru_cache(maxsize=65536)
def lemmas(word: str) -> frozenset[str]:
    """The noun and verb lemmas of an English word form (LemmInflect's lexicon; empty without it).
    Adjective and adverb lemmas are left out on purpose: `better` → `good` is a comparative."""
    return noun_verb_lemmas(word) or frozenset()


@lru_cache(maxsize=65536)
def synonyms(x: str, y: str) -> bool:
    """Both words (or their noun/verb lemmas) share a synset among their most frequent WordNet senses."""
    senses = wordnet_senses()

    def of(word: str) -> frozenset[int]:
        found = senses.get(word, frozenset())
        for lemma in lemmas(word):
            found |= senses.get(lemma, frozenset())
        return found

    return bool(of(x) & of(y))


def _compound(tok: Token, others: list[Token]) -> list[int] | None:
    """Two adjacent words on the other side written as one here: `setup` / `set up`, `login` / `log in`."""
    word = tok.raw
    if len(word) < 4 or not word.isalpha():
        return None
    for k in range(len(others) - 1):
        x, y = others[k], others[k + 1]
        if not (x.han or y.han or x.number or y.number) and x.raw + y.raw == word:
            return [k, k + 1]
    return None


def _blend(tok: Token, others: list[Token]) -> list[int] | None:
    """Indexes of two adjacent words in `others` whose beginnings, two letters or more each, spell `tok`
    (`fedex` ← Federal Express); `tok` is no word any dictionary here knows (WordNet's `amex` is the
    American Stock Exchange)."""
    word = tok.raw
    if not (4 <= len(word) <= 8 and word.isalpha()) or known_word(word):
        return None
    for k in range(len(others) - 1):
        x, y = others[k], others[k + 1]
        if x.stop or y.stop or x.han or y.han or x.number or y.number:
            continue
        for cut in range(2, len(word) - 1):
            head, tail = word[:cut], word[cut:]
            if x.raw.startswith(head) and y.raw.startswith(tail) and (len(x.raw) > cut or len(y.raw) > len(tail)):
                return [k, k + 1]
    return None


def _acronym(tok: Token, others: list[Token]) -> list[int] | None:
    """Indexes of a run of words in `others` whose initials spell `tok` (`rpm` ← requests per minute),
    short function words inside the run skipped (`eta` ← estimated time of arrival)."""
    word = tok.raw
    if not (2 <= len(word) <= 5 and word.isalpha()):
        return None
    for start in range(len(others)):
        run, k, j = [], 0, start
        while k < len(word) and j < len(others):
            t = others[j]
            if t.han or t.number:
                break
            if t.raw[:1] == word[k]:
                run.append(j)
                k += 1
            elif not (run and t.raw in _ACRONYM_GAP):
                break
            j += 1
        if k == len(word) and run[0] == start:
            return list(range(start, run[-1] + 1))
    return None


# function words an acronym skips inside its run (`ETA` ← estimated time of arrival)
_ACRONYM_GAP = frozenset({"of", "and", "for", "the", "to", "in", "on", "at", "&"})


def align(a: Analysis, b: Analysis) -> Alignment:
    a_content = [i for i, t in enumerate(a.tokens) if not t.stop and not t.neg]
    b_content = [i for i, t in enumerate(b.tokens) if not t.stop and not t.neg]
    canon_b = [t.text for t in b.tokens]  # B's tokens rewritten to their counterparts' text
    matched_a: set[int] = set()
    matched_b: set[int] = set()

    # 1. identical tokens, as multisets
    b_by_text: dict[str, list[int]] = {}
    for j in b_content:
        b_by_text.setdefault(b.tokens[j].text, []).append(j)
    for i in a_content:
        slots = b_by_text.get(a.tokens[i].text)
        if slots:
            matched_b.add(slots.pop(0))
            matched_a.add(i)
    # 2a. a closed-up compound (`setup` / `set up`) before spellings: `set` would pass for a clipped `setup`
    for side, own, other, mine, theirs in ((0, a, b, matched_a, matched_b), (1, b, a, matched_b, matched_a)):
        content, other_content = (a_content, b_content) if side == 0 else (b_content, a_content)
        for i in content:
            if i not in mine and (run := _compound(own.tokens[i], other.tokens)) and not theirs.intersection(run):
                mine.add(i)
                theirs.update(j for j in run if j in other_content)
                if side == 0:
                    for j in run:
                        canon_b[j] = a.tokens[i].text
                else:
                    canon_b[i] = " ".join(a.tokens[j].text for j in run)
    # 2. the same word spelled differently
    for i in a_content:
        if i in matched_a:
            continue
        for j in b_content:
            if j not in matched_b and same_word(a.tokens[i], b.tokens[j]):
                matched_a.add(i)
                matched_b.add(j)
                canon_b[j] = a.tokens[i].text
                break
    # 3. acronyms and blends, either way
    for i in a_content:
        if i not in matched_a and (run := _acronym(a.tokens[i], b.tokens) or _blend(a.tokens[i], b.tokens)):
            matched_a.add(i)
            matched_b.update(j for j in run if j in b_content)
            for j in run:
                canon_b[j] = a.tokens[i].text
    for j in b_content:
        if j not in matched_b and (run := _acronym(b.tokens[j], a.tokens) or _blend(b.tokens[j], a.tokens)):
            matched_b.add(j)
            matched_a.update(i for i in run if i in a_content)
            canon_b[j] = " ".join(a.tokens[i].text for i in run)

    # 3b. a light `make` before a noun that names the other side's action (`make a payment` / `pay`)
    for own, other, content, mine in ((a, b, a_content, matched_a), (b, a, b_content, matched_b)):
        for i in content:
            if i not in mine and (k := _light_make(own.tokens, i, other.tokens)) is not None and k in mine:
                mine.add(i)

    seq_a = [t.text for t in a.tokens]
    ops = difflib.SequenceMatcher(None, seq_a, canon_b, autojunk=False).get_opcodes()
    # 4. a Chinese character replaced in place by one that sounds the same (an input-method slip)
    for tag, i1, i2, j1, j2 in ops:
        if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1 and i1 not in matched_a and j1 not in matched_b:
            ta, tb = a.tokens[i1], b.tokens[j1]
            if ta.han and tb.han and homophones(ta.text, tb.text):
                matched_a.add(i1)
                matched_b.add(j1)
                canon_b[j1] = ta.text
        elif tag == "replace" and _function_word_slip(a.tokens[i1:i2], b.tokens[j1:j2]):
            # the slip inside a function word (`怎么办` typed `怎么半`): the block is that function word
            matched_a.update(range(i1, i2))
            matched_b.update(range(j1, j2))
            canon_b[j1:j2] = [t.text for t in a.tokens[i1:i2]][: j2 - j1] + [""] * max(0, (j2 - j1) - (i2 - i1))
    matcher = difflib.SequenceMatcher(None, seq_a, canon_b, autojunk=False)
    unmatched_a = [i for i in a_content if i not in matched_a]
    unmatched_b = [j for j in b_content if j not in matched_b]
    ua, ub = set(unmatched_a), set(unmatched_b)
    # Places where content changed; two changes with only function words between them are one
    # place ("充值的钱" → "赠送的代金券" changes one slot, not two).
    changed, bridge = 0, False
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            bridge = bridge and all(a.tokens[i].stop for i in range(i1, i2))
            continue
        if ua.intersection(range(i1, i2)) or ub.intersection(range(j1, j2)):
            if not bridge:
                changed += 1
            bridge = True
    return Alignment([a.tokens[i] for i in unmatched_a], [b.tokens[j] for j in unmatched_b],
                     len(matched_a), matcher.ratio(), changed)


_MAKE = frozenset({"make", "makes", "made", "making"})


def _light_make(own: list[Token], i: int, others: list[Token]) -> int | None:
    """`make` with the noun right after it (articles aside) naming an action the other question says
    as its own verb (`make a payment` / `pay`, `make a reservation` / `reserve`): that noun's index.
    Only a derived form counts, not the same noun (`make a payment` / `take a payment`), and only when
    the other question has no `make` of its own."""
    if own[i].raw not in _MAKE or any(t.raw in _MAKE for t in others):
        return None
    k = next((n for n in range(i + 1, len(own)) if not own[n].stop), None)
    if k is None or own[k].han or own[k].number or own[k].entity:
        return None
    noun = own[k]
    linked = [t for t in others if not t.stop and not t.han and t.text != noun.text and same_word(noun, t)]
    return k if linked and not any(t.text == noun.text for t in others) else None


def _function_word_slip(xs: list[Token], ys: list[Token]) -> bool:
    """Two blocks of Chinese tokens that spell one text but for one character, the two characters
    homophones, and a function word on one side: one side has the function word, the other the same
    word with one character mistyped, which the tokenizer then split (`怎么办` / `怎么` + `半`)."""
    if not (xs and ys and all(t.han for t in (*xs, *ys)) and any(t.stop for t in (*xs, *ys))):
        return False
    x, y = "".join(t.text for t in xs), "".join(t.text for t in ys)
    if len(x) != len(y) or len(x) > 4:
        return False
    diff = [(p, q) for p, q in zip(x, y, strict=True) if p != q]
    return len(diff) == 1 and homophones(*diff[0])


@lru_cache(maxsize=8192)
def homophones(x: str, y: str) -> bool:
    """Two Chinese characters that share a reading (tone ignored): 账/帐, 置/制, 邮/油."""
    rx, ry = readings(x), readings(y)
    if rx is None or ry is None:  # pypinyin is optional: without it a mistyped character is a changed one
        return False
    return bool(rx & ry) and x.isalpha() and y.isalpha() and rx != {x} and ry != {y}
