"""The Chinese readings of `placement`: negation scopes, argument places and units from jieba's tags.

Chinese has no dependency parse here, so the places come from word order in jieba's tagging
(`structure.zh_tagged`): the word a negator precedes is its scope, with the noun right after it when
there is one (`不包括逆变器` scopes `包括+逆变器`); the noun before a verb run is its doer and the noun right
after a verb what it acts on; `X被Y V` is Y doing V to X. The units the exchange reading compares are
characters, not words, so the same stretch is the same whatever the segmenter made of it in each
sentence, with word starts kept so that a stretch cut inside a word on both sides (`还|是`) is none.
What the readings are for, and how `placement` compares them, is `placement`'s docstring.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.semantic import structure
from gateway.semantic.lexicon import ZH_NEGATORS, ZH_STOP

if TYPE_CHECKING:  # annotations only: `placement` imports this module
    from gateway.semantic.placement import Places, Unit

PERSONS = {"我": "我", "我们": "我们", "你": "你", "您": "你", "你们": "你们"}
# A middle with one of these between two exchanged stretches coordinates them (see `placement`'s
# `_EN_SYMMETRIC`): `但` joins two statements, either way round
_SYMMETRIC = frozenset("和 与 跟 同 及 以及 或 或者 还是 、 但 但是 可是 而 而且 并且".split())  # noqa: SIM905


def coordinates(middle: Sequence[Unit]) -> bool:
    """A coordinating word in the middle, words as the segmenter cut them (`和` coordinates, the `同`
    of `同意` does not)."""
    words: list[str] = []
    for ch, _content, starts in middle:
        if starts or not words:
            words.append(ch)
        else:
            words[-1] += ch
    return any(w in _SYMMETRIC for w in words)


def places(tagged: Sequence[tuple[str, str]]) -> Places:
    """The tagged question's negation scopes, argument places, what it says and its units (see the
    module docstring)."""
    neg: set[str] = set()
    args: dict[str, set[str]] = defaultdict(set)
    n = len(tagged)

    def noun(i: int) -> str | None:
        word, flag = tagged[i]
        if word in PERSONS:
            # `我的X` names a thing, not a party
            return None if i + 1 < n and tagged[i + 1][0] == "的" else PERSONS[word]
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
            # a word the tagger reads as a pronoun, a noun, a time or a conjunction only begins with a
            # negator's character (`别人`, `无线`, `未来`, `否则`, `无论`): it negates nothing
            if word.startswith(negator) and (word == negator or not _flag.startswith(_ZH_NOT_NEGATED)):
                rest = word[len(negator):]
                j = i + 1
                if not rest:  # the negator stands alone: it scopes over the next content word of its clause
                    while j < n and tagged[j][0] in ZH_STOP and tagged[j][0] not in _ZH_CLAUSE_ENDS:
                        j += 1
                    if j < n and (tagged[j][0] in _ZH_CLAUSE_ENDS or tagged[j][1] == "x"):
                        j = i + 1  # `不在的时候`: `在`, not what follows the clause
                    ended = j >= n or tagged[j][0] in _ZH_CLAUSE_ENDS or tagged[j][1] == "x"
                    rest, j = ("", j) if ended else (tagged[j][0], j + 1)
                if rest and i > 0 and tagged[i - 1][0].endswith(rest[0]):
                    break  # `会不会`, `能不能`: a yes/no question, not a negation
                if rest in _ZH_MODALS and j < n and tagged[j][1].startswith("v"):
                    rest, j = tagged[j][0], j + 1  # `不能连接` negates the connecting, as `别连接` does
                if rest:
                    # what the negated verb takes, also when the tagger calls it a fixed expression or
                    # an abbreviation (`不包括逆变器`: `l`)
                    after = noun(j) if j < n else None
                    if after is None and j < n and tagged[j][1].startswith(("l", "j", "i")) \
                            and tagged[j][0] not in ZH_STOP:
                        after = tagged[j][0]
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
    units = _zh_units(tagged)
    said = frozenset(word for word, _ in tagged)
    # what is said, also across a particle (`扣了钱` says `扣钱`)
    for text in ("".join(word for word, _ in tagged), "".join(u[0] for u in units)):
        said |= frozenset(text[i:j] for i in range(len(text)) for j in range(i + 1, min(len(text), i + 4) + 1))
    return frozenset(neg), {w: frozenset(p) for w, p in args.items()}, said, units, frozenset()


_ZH_FUNCTION_TAGS = ("d", "c", "p", "u", "y", "x", "e", "o")
_ZH_NOT_NEGATED = ("r", "n", "t", "c", "f", "s", "m", "q")
# where a clause ends (`我不在的时候邻居…`: the negation stays in its clause)
_ZH_CLAUSE_ENDS = frozenset("的 时候 的时候 时 后 以后 之后 前 以前 之前 但 但是 而 就".split())  # noqa: SIM905
# modal verbs a negator may stand before: what is negated is the verb after them
_ZH_MODALS = frozenset("能 能够 会 可以 可 要 想 用 需要 必 必要 应该 该 敢 肯 愿意".split())  # noqa: SIM905


def _zh_units(tagged: Sequence[tuple[str, str]]) -> tuple[Unit, ...]:
    """The question's characters in order, punctuation and the particles `了`, `吗`, `呢` left out (`的`
    stays: `作业截止以后` / `截止以后的作业` is the same thing, not an exchange):
    characters, not words, so the same stretch is the same whatever the segmenter made of it in
    each sentence.

    Persons are content (`我可以替我妈妈…` / `我妈妈可以替我…` exchanges the parties). A verb's phase
    complement or aspect (`做完`, `看过`) is left out: `先做完A才能B` / `先看完B才能做A` exchange A and B
    whichever of them says it is finished. A word the segmenter glued from a one-character adverb and a
    verb (`先订`, `再订`: both adverb and verb on their own in its dictionary) is two words."""
    out: list[Unit] = []
    prev_verb = False
    for word, flag in tagged:
        if flag.startswith(("ul", "y", "x")) or not word.strip():
            continue
        content = (not flag.startswith(_ZH_FUNCTION_TAGS) and word not in ZH_STOP) or word in PERSONS
        starts = {0}
        if prev_verb and word[0] in _ZH_PHASE:
            word, starts = word[1:], {0}
        elif len(word) > 1 and flag.startswith("v") and structure.zh_dictionary_tag(word[0]) == "d" \
                and (structure.zh_dictionary_tag(word[1:]) or "").startswith("v"):
            starts = {0, 1}
        out.extend((ch, content, n in starts) for n, ch in enumerate(word))
        prev_verb = flag.startswith("v")
    return tuple(out)


# a verb's phase complement or aspect right after it
_ZH_PHASE = frozenset("完过着掉")
