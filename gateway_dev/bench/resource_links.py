"""`python -m gateway_dev.bench.resource_links`: the "operation swap" test of a word-linking resource.

A resource that says two words mean the same (a synonym table, derivations, a thesaurus) widens the
same-content lane: the pair is served on its words alone. The danger is a link between the very words
in which two questions differ — `cancel` / `delete`, `refund` / `return`, `country` / `state` — which
turns a different question into "the same words". This runs a resource over every hard-negative pair
(every kind but the unrelated ones) of the dev pairs, the tuning split and held-out splits 1–7, takes
the words of each question that the other lacks, and lists every link the resource makes between the
two sides' lists. A resource that links any is not safe as it is. Links on reusable pairs are counted
too: they are what the resource could gain (a link alone does not make a hit: the rest must agree).

English words are compared by stem (`gateway.semantic.lexical`); Chinese as character runs, every run
of 1–4 characters one side has and the other lacks. Built-in resources: `wordnet` (the shipped synonym
table: a shared synset among both words' most frequent senses), `inflection` (LemmInflect's noun and
verb lemmas: the same word inflected, listed apart because it is not a synonym), `contraction` (an
abbreviation by contraction: `appt` / `appointment`), `negated` (an adjective negated by its prefix and
the adjective, WordNet's antonym pairs: `unavailable` / `available`, read as `not available`),
`homophones` (a Chinese character replaced in place by one that sounds the same) and `zh_rewrites` (two
runs of the texts as written that `normalize_zh` rewrites to one). `candidate(name, lang, linked)` registers another.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.semantic import normalize, normalize_zh
from gateway.semantic.align import contracted, homophones, lemmas, synonyms
from gateway.semantic.lexical import analyze
from gateway_dev.bench.semantic import UNRELATED, default_sets

Linked = Callable[[str, str], bool]


@dataclass(slots=True)
class Resource:
    name: str
    lang: str
    linked: Linked
    # a rule the aligner applies only to one token replaced by one in place (the homophone step):
    # only such replacements are offered to it
    in_place: bool = False
    # a rewrite of the question's text (`normalize_zh`): offered the runs of the texts as written,
    # since the analysed text already has it applied
    raw: bool = False


@dataclass(slots=True)
class Report:
    negatives: list[tuple[str, str, tuple[tuple[str, str], ...], str, str]] = field(default_factory=list)
    positives: Counter[str] = field(default_factory=Counter)


def differing_words(cached: str, query: str, lang: str, raw: bool = False) -> tuple[list[str], list[str]]:
    """The words (English) or character runs (Chinese) of each question that the other lacks."""
    if raw and lang == "zh":
        return _han_runs(cached, query), _han_runs(query, cached)
    a, b = analyze(cached), analyze(query)
    if lang == "zh":
        return _han_runs(a.text, b.text), _han_runs(b.text, a.text)
    ca = [t for t in a.content if not t.number and t.raw.isalpha()]
    cb = [t for t in b.content if not t.number and t.raw.isalpha()]
    sa, sb = {t.text for t in ca}, {t.text for t in cb}
    return (sorted({t.raw for t in ca if t.text not in sb}), sorted({t.raw for t in cb if t.text not in sa}))


def replaced_in_place(cached: str, query: str) -> list[tuple[str, str]]:
    """Tokens replaced one for one where the rest of the two token sequences agrees."""
    ta, tb = [t.text for t in analyze(cached).tokens], [t.text for t in analyze(query).tokens]
    ops = difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes()
    return [(ta[i1], tb[j1]) for tag, i1, i2, j1, j2 in ops if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1]


_HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]+")


def _han_runs(text: str, other: str) -> list[str]:
    out: set[str] = set()
    for m in _HAN_RUN.finditer(text):
        run = m.group(0)
        for size in (1, 2, 3, 4):
            for i in range(len(run) - size + 1):
                piece = run[i : i + size]
                if piece not in other:
                    out.add(piece)
    return sorted(out)


def audit(resources: Sequence[Resource], sets: Iterable[tuple[str, list[dict[str, Any]]]]) -> dict[str, Report]:
    reports = {r.name: Report() for r in resources}
    for split, rows in sets:
        for row in rows:
            lang = row.get("lang")
            hard = not row["reuse"] and row.get("kind") not in UNRELATED
            if lang not in ("en", "zh") or not (hard or row["reuse"]):
                continue
            da, db = differing_words(row["cached"], row["query"], lang)
            swaps = replaced_in_place(row["cached"], row["query"])
            for res in resources:
                if res.lang != lang:
                    continue
                if res.raw:
                    ra, rb = differing_words(row["cached"], row["query"], lang, raw=True)
                    offered = [(x, y) for x in ra for y in rb]
                else:
                    offered = swaps if res.in_place else [(x, y) for x in da for y in db]
                links = tuple((x, y) for x, y in offered if res.linked(x, y))
                if not links:
                    continue
                report = reports[res.name]
                if hard:
                    report.negatives.append((split, str(row.get("kind")), links, row["cached"], row["query"]))
                else:
                    report.positives[split] += 1
    return reports


def _wordnet(x: str, y: str) -> bool:
    return not (lemmas(x) & lemmas(y)) and synonyms(x, y)


def _inflection(x: str, y: str) -> bool:
    return bool(lemmas(x) & lemmas(y))


def _contraction(x: str, y: str) -> bool:
    return contracted(x, y) or contracted(y, x)


def _negated(x: str, y: str) -> bool:
    table = normalize._negated_adjectives()
    return table.get(x.lower()) == y.lower() or table.get(y.lower()) == x.lower()


def _homophones(x: str, y: str) -> bool:
    return len(x) == 1 and len(y) == 1 and homophones(x, y)


def _zh_rewrites(x: str, y: str) -> bool:
    """Two runs the Chinese rewrites make one (`老是` / `一直`), content on both sides."""
    rx, ry = normalize_zh.chinese(x), normalize_zh.chinese(y)
    return rx == ry and any(not t.stop for t in analyze(rx).tokens)


BUILT_IN = [Resource("wordnet", "en", _wordnet), Resource("inflection", "en", _inflection),
            Resource("contraction", "en", _contraction), Resource("negated", "en", _negated),
            Resource("homophones", "zh", _homophones, in_place=True),
            Resource("zh_rewrites", "zh", _zh_rewrites, raw=True)]


def evaluation_sets() -> list[tuple[str, list[dict[str, Any]]]]:
    """Dev, tune and held-out 1–7 (`bench semantic`'s default sets)."""
    return default_sets()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gateway_dev.bench.resource_links", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args(list(argv) if argv is not None else None)
    reports = audit(BUILT_IN, evaluation_sets())
    for name, report in reports.items():
        print(f"{name}: {len(report.negatives)} hard-negative pairs with a link; reusable pairs with a link: "
              f"{sum(report.positives.values())} {dict(report.positives)}")
        for split, kind, links, cached, query in report.negatives:
            print(f"  {split} {kind}: {list(links)} | {cached} || {query}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
