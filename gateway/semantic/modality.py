"""What a yes/no question asks of its action: whether it is allowed, or whether it is required.

The modals are function words (`can`, `must`, `可以`, `必须` carry no content of their own), so
without this `can I bring my own food?` and `do I have to bring my own food?`, or `可以带狗吗` and
`需要带狗吗`, would be one question. Wh-questions whose question word frames the modal (`how can I`,
`how should I`, `怎么才能`) ask for a method either way and are exempt.

One pair of modalities is the same question asked from its other side: whether an action is
*required* and whether one may do *without* it (□X and ◇¬X answer each other: "is a card required to
check in?" / "can I check in without a card?", `必须戴头盔吗` / `可以不戴头盔吗`). `dual` reads that
pair, so the guard takes neither the negation nor the modality for a change. The negator must come
after the permission and must not negate the modal itself: `can't I check in with a card?` and
`不能戴头盔吗` deny the permission (¬◇X), which is no such dual.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gateway.semantic.lexical import Analysis

_WH_WORDS = frozenset("how what where when why which who whom whose".split())  # noqa: SIM905
# (the verb `need` with an object too: `do I need a card to check in?` is not `can I check in with a card?`)
_OBLIGED = re.compile(r"\b(?:must|should|ought|(?:have|has|had)\s+to|needs?|required|necessary|mandatory"
                      r"|obligatory|compulsory)\b")
_ALLOWED = re.compile(r"\b(?:can|could|may|able|allowed|permitted|possible|ok|okay)\b")
# necessity only (`should` advises: `should I feed my dog?` is no dual of `can I not feed it?`), also
# the verb `need` with an object (`do I need a card to …`)
_NECESSARY = re.compile(r"\b(?:must|(?:have|has)\s+to|needs?|required|necessary|mandatory|obligatory|compulsory)\b")
_ACTION_REQUIRED = re.compile(r"\b(?:must|(?:have|has|need|needs)\s+to|required\s+to)\b")
_EN_NEGATOR = re.compile(r"\b(?:not|without|never|no)\b")

# Chinese modals: permission or possibility, and necessity (`要` alone also means "want" or "will",
# so it is not read as either)
_ZH_ALLOWED = re.compile("可以|能够|允许|可否|能否|能")
_ZH_OBLIGED = re.compile("必须|必需|一定要|需要|非得|务必|应该")
_ZH_NECESSARY = re.compile("必须|必需|一定要|需要|非得|务必")
_ZH_NEGATOR = re.compile("没有|没|不|无")
# question words that ask for a method: the modal then frames it (`怎么才能退款` / `怎么退款`)
_ZH_METHOD = re.compile("怎么|怎样|如何")


@lru_cache(maxsize=8192)
def modality_of(surface: str) -> str | None:
    """"allowed", "obliged" or None for an English question's lower-cased surface."""
    obliged, allowed = _OBLIGED.search(surface), _ALLOWED.search(surface)
    first = min((m.start() for m in (obliged, allowed) if m is not None), default=None)
    if first is None:
        return None
    if any(w in _WH_WORDS for w in surface[:first].split()):
        return None  # `how can I …` and `how do I …` ask the same: the modal frames a method
    # (a wh-word after the modal opens a clause of its own: `can I stay in my car when I pick up?`)
    return "obliged" if obliged else "allowed"


@lru_cache(maxsize=8192)
def zh_modality_of(text: str) -> str | None:
    """The same for a Chinese question: its first modal, unless a method question word frames it."""
    if _ZH_METHOD.search(text):
        return None
    obliged, allowed = _ZH_OBLIGED.search(text), _ZH_ALLOWED.search(text)
    first = min((m for m in (obliged, allowed) if m is not None), key=lambda m: m.start(), default=None)
    if first is None:
        return None
    return "obliged" if first is obliged else "allowed"


def modality(a: Analysis) -> str | None:
    return zh_modality_of(a.text) if a.lang == "zh" else modality_of(a.surface)


def dual(a: Analysis, b: Analysis) -> bool:
    """One question asks whether an action is required, the other whether one may do without it
    (the only negation of the pair, after the permission, not on it)."""
    if a.negations == 1 and b.negations == 0:
        return _dual(a, b)
    if b.negations == 1 and a.negations == 0:
        return _dual(b, a)
    return False


def _dual(negated: Analysis, other: Analysis) -> bool:
    how = _without(negated)
    if how is None or not _required(other):
        return False
    # `can I not V` answers `must I V` (an action required), not `do I need X to V` (a thing)
    return how != "not" or _ACTION_REQUIRED.search(other.surface) is not None


def _required(a: Analysis) -> bool:
    if a.lang == "zh":
        return zh_modality_of(a.text) == "obliged" and _ZH_NECESSARY.search(a.text) is not None
    return modality_of(a.surface) != "allowed" and _NECESSARY.search(a.surface) is not None and _yes_no(a.surface)


def _without(a: Analysis) -> str | None:
    """Permission asked for an action with a negation after it: `can I V without X` ("without"),
    `can I not V` ("not"), `可以不V`, `没有X可以V吗` (the negator not on the modal: `can not`, `不能`,
    `不可以` deny the permission itself)."""
    if a.lang == "zh":
        if zh_modality_of(a.text) != "allowed":
            return None
        allowed = _ZH_ALLOWED.search(a.text)
        neg = _ZH_NEGATOR.search(a.text)
        if allowed is None or neg is None or neg.end() == allowed.start():
            return None  # `不能`, `不可以`: the permission itself denied
        return "without"
    s = a.surface
    if modality_of(s) != "allowed" or not _yes_no(s):
        return None
    allowed = _ALLOWED.search(s)
    neg = _EN_NEGATOR.search(s)
    if allowed is None or neg is None:
        return None
    if neg.group(0) in ("without", "no"):
        return "without"  # `without X`, `with no X` name what is done without, wherever it stands
    # `can I not V` (the subject between them), never `can not I` nor `not allowed to`
    between = s[allowed.end():neg.start()].split()
    return "not" if neg.start() > allowed.start() and len(between) >= 1 and between[0] != "not" else None


def _yes_no(surface: str) -> bool:
    words = surface.split()
    return bool(words) and words[0] not in _WH_WORDS
