"""The semantic cache's decision: cosine first, then a lexical guard against one-slot edits.

No embedder separates "How do I turn on X?" from "How do I turn off X?" with a threshold: a real
paraphrase can score lower than such a near-copy. So a candidate that clears the tenant's threshold
is compared with the new question word by word (`gateway.semantic.align`) and rejected when:

- the two are in different languages (the cached answer is in the other one);
- their numbers differ (amounts, HTTP statuses, versions, dates, counts) — a number on one side only
  counts as a difference;
- their quoted strings, back-ticked identifiers, URLs or paths differ;
- one is negated and the other is not (`not`, `without`, `不`, `没有` …; yes/no forms such as
  `会不会` are not negations);
- one says a word and the other its opposite (`on`/`off`, `import`/`export`, `开启`/`关闭` …);
- a tenant's mutually exclusive terms differ (plans, products, regions: policy `exclusive_terms`);
- two terms swapped places in the same sentence frame (`from monthly to annual` / `from annual to monthly`);
- the question is a near-copy of the cached one with some content word changed: the token sequences
  agree at least `near_copy_ratio` but a content word has no counterpart (a changed entity, platform,
  plan, operation, scope …). A reworded question, which changes many function words, is judged by
  its cosine and the checks above;
- a name-like token (digits, ALL CAPS, camelCase, a capitalised word mid-sentence, an identifier,
  Latin text in Chinese) on one side has no counterpart on the other.

When no content word changed at all (reordered, misspelt, abbreviated, politer), the cosine may be
`same_content_margin` below the threshold: the words themselves say it is the same question.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from gateway.semantic.align import Alignment, align
from gateway.semantic.lexical import Analysis, analyze
from gateway.semantic.lexicon import EN_ANTONYMS, ZH_ANTONYMS


@dataclass(frozen=True, slots=True)
class GuardParams:
    """Tuning of the second stage (settings file: `semantic.params`; see docs/semantic-cache.md)."""

    near_copy_ratio: float = 0.5  # token-sequence similarity from which a changed content word is a slot edit
    same_content_margin: float = 0.10  # cosine slack when every content word has a counterpart
    cross_language: bool = False  # allow a hit between questions in different languages
    entity_check: bool = True  # reject an unmatched name-like token in reworded questions

    @classmethod
    def from_settings(cls, params: dict[str, Any]) -> GuardParams:
        known = {f.name for f in fields(cls)}
        unknown = set(params) - known
        if unknown:
            raise ValueError(f"unknown semantic.params: {sorted(unknown)} (known: {sorted(known)})")
        return cls(**params)


@dataclass(frozen=True, slots=True)
class Verdict:
    hit: bool
    reason: str  # "hit" or why not
    similarity: float


def check(a: Analysis, b: Analysis, exclusive_terms: Sequence[Sequence[str]] = (),
          params: GuardParams = GuardParams()) -> tuple[str | None, Alignment | None]:
    """The guard alone: the reason two questions must not share an answer, or None."""
    if a.lang != b.lang and not params.cross_language:
        return "cross_language", None
    if a.numbers != b.numbers:
        return "number", None
    if a.quoted != b.quoted:
        return "quoted", None
    if a.negations % 2 != b.negations % 2:
        return "negation", None
    if _opposites(a, b):
        return "antonym", None
    if exclusive_terms and _exclusive(a, b, exclusive_terms):
        return "exclusive_terms", None
    al = align(a, b)
    if _swapped(a, b):
        return "role_swap", al
    changed = bool(al.unmatched_a or al.unmatched_b)
    if changed and al.ratio >= params.near_copy_ratio:
        return "slot_edit", al
    if params.entity_check and any(t.entity for t in (*al.unmatched_a, *al.unmatched_b)):
        return "entity", al
    return None, al


def decide(cached: str, query: str, similarity: float, threshold: float,
           exclusive_terms: Sequence[Sequence[str]] = (), params: GuardParams = GuardParams()) -> Verdict:
    """May the answer cached for `cached` be served for `query`? `similarity` is their cosine."""
    if similarity < threshold - params.same_content_margin:
        return Verdict(False, "below_threshold", similarity)
    if cached == query:
        return Verdict(True, "hit", similarity)
    a, b = analyze(cached), analyze(query)
    reason, al = check(a, b, exclusive_terms, params)
    if reason is not None:
        return Verdict(False, reason, similarity)
    same_content = al is not None and not al.unmatched_a and not al.unmatched_b
    if similarity < threshold and not same_content:
        return Verdict(False, "below_threshold", similarity)
    return Verdict(True, "hit", similarity)


def _opposites(a: Analysis, b: Analysis) -> bool:
    if a.lang == "zh" or b.lang == "zh":
        for x, y in ZH_ANTONYMS:
            ax, ay, bx, by = x in a.text, y in a.text, x in b.text, y in b.text
            if (ax and not ay and by and not bx) or (ay and not ax and bx and not by):
                return True
    wa, wb = _word_set(a), _word_set(b)
    for x, y in EN_ANTONYMS:
        ax, ay, bx, by = x in wa, y in wa, x in wb, y in wb
        if (ax and not ay and by and not bx) or (ay and not ax and bx and not by):
            return True
    return False


def _word_set(a: Analysis) -> set[str]:
    raws = [t.raw for t in a.tokens]
    return set(raws) | {f"{x} {y}" for x, y in zip(raws, raws[1:], strict=False)}


def _exclusive(a: Analysis, b: Analysis, groups: Sequence[Sequence[str]]) -> bool:
    ta, tb = a.text.lower(), b.text.lower()
    for group in groups:
        in_a = {t for t in group if t.lower() in ta}
        in_b = {t for t in group if t.lower() in tb}
        if in_a != in_b and (in_a or in_b):
            return True
    return False


def _swapped(a: Analysis, b: Analysis) -> bool:
    """Two terms exchanged places in an otherwise identical frame (`from X to Y` / `from Y to X`)."""
    import difflib

    sa, sb = [t.text for t in a.tokens], [t.text for t in b.tokens]
    if Counter(t.text for t in a.content) != Counter(t.text for t in b.content):
        return False
    ops = [op for op in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes() if op[0] != "equal"]
    for n, (_, i1, i2, j1, j2) in enumerate(ops):
        for _, k1, k2, l1, l2 in ops[n + 1 :]:
            if sa[i1:i2] and sa[i1:i2] == sb[l1:l2] and sa[k1:k2] and sa[k1:k2] == sb[j1:j2]:
                return True
    return False
