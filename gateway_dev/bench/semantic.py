"""`llm-cache-gateway bench semantic --pairs FILE [--threshold T]`: the semantic cache's decision on labelled pairs.

Each line of FILE is `{"id", "lang", "domain", "cached", "query", "reuse", "kind"}` (the format of
`tests/data/eval/semantic_pairs_dev.jsonl`). Both questions are embedded with the configured embedder
(`GATEWAY_EMBEDDING_MODEL`, default: the packaged one), and the live decision function
(`gateway.semantic.guard.decide`, the one the stage calls) judges each pair at the policy threshold
`T` (similarity scale; default: the policy default). Printed: precision, recall and false-hit rate
overall, by language and by kind, with bare cosine at the same cosine cut beside each.

`--cross-validate` also estimates held-out behaviour: for every split of the domains into two
halves, the guard's ratios and the threshold are tuned on one half (the best recall with precision
≥ 0.97 and hard-negative false hits ≤ 2%) and measured on the other.

Then the *ceilings* (`semantic_ceilings.py`), for diagnosis (each at its best threshold, chosen after
the fact, so an upper bound and not a setting): bare cosine's ROC AUC, the best recall it reaches at precision
≥ `--at-precision` (0.90) and its precision at recall `--at-recall` (0.40); the same for the live
decision (guard + cosine) over every threshold; and the share of reusable pairs the guard lets
through at all, whatever the cosine — the recall no threshold and no embedder can exceed with
these guard settings.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from gateway.config import Settings
from gateway.policy.models import SemanticCachePolicy
from gateway.semantic import paraphrase, structure
from gateway.semantic.embedder import backend_from_settings
from gateway.semantic.guard import (
    REWORDED,
    SAME_CONTENT,
    GuardParams,
    check,
    cosine_for,
    decide,
    lane_of,
    markers_differ,
)
from gateway.semantic.lexical import analyze
from gateway.semantic.options import SemanticOptions

UNRELATED = {"unrelated", "unrelated_same_topic", "qqp_not_duplicate"}
EVAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "eval"


@dataclass(slots=True)
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, hit: bool, reuse: bool) -> None:
        if hit and reuse:
            self.tp += 1
        elif hit:
            self.fp += 1
        elif reuse:
            self.fn += 1
        else:
            self.tn += 1

    @property
    def precision(self) -> float:
        if self.tp + self.fn == 0:  # a group of negatives only: precision says nothing
            return float("nan")
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else float("nan")

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan")

    @property
    def false_hit_rate(self) -> float:
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else float("nan")


def load_pairs(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        for field in ("cached", "query", "reuse"):
            if field not in row:
                raise ValueError(f"{path}:{n}: missing field {field!r}")
        rows.append(row)
    return rows


def cosines(rows: list[dict[str, Any]], settings: Settings) -> tuple[np.ndarray, str, float, float]:
    key = settings.vendor_key("openai")
    backend = backend_from_settings(settings.embedding_model, settings.base_url("openai"), key)
    started = time.perf_counter()
    backend.load()
    texts = sorted({r["cached"] for r in rows} | {r["query"] for r in rows})
    vectors: dict[str, np.ndarray] = {}
    for i in range(0, len(texts), 64):
        chunk = texts[i : i + 64]
        vectors.update(zip(chunk, backend.encode(chunk), strict=True))
    elapsed = time.perf_counter() - started
    sims = np.array([float(np.dot(vectors[r["cached"]], vectors[r["query"]])) for r in rows])
    return sims, backend.name, backend.anchor, elapsed


def judge(rows: list[dict[str, Any]], sims: np.ndarray, raw_threshold: float, params: GuardParams) -> np.ndarray:
    """The stage's decision before any evidence: `decide`, then for a reworded pair the second opinion
    and the structure check (`gateway.semantic.paraphrase.confident`), as `SemanticCacheStage.lookup`."""
    out = []
    for r, c in zip(rows, sims, strict=True):
        verdict = decide(r["cached"], r["query"], float(c), raw_threshold, (), params)
        if verdict.hit and not roles_kept(r):
            out.append(False)
            continue
        out.append(verdict.hit or (verdict.reason == REWORDED and confident_pair(r, float(c), params)))
    return np.array(out, dtype=bool)


def roles_kept(r: dict[str, Any]) -> bool:
    """The stage's role check on a same-content English hit (`SemanticCacheStage._roles_agree`)."""
    cached, query = r["cached"], r["query"]
    if cached == query or analyze(query).lang != "en" or analyze(cached).lang != "en":
        return True
    if not structure.may_swap_roles(cached, query):
        return True
    return structure.roles_agree(cached, query, "en") is not False


def confident_pair(r: dict[str, Any], cosine: float, params: GuardParams) -> bool:
    lang = analyze(r["query"]).lang
    if analyze(r["cached"]).lang != lang:
        return False  # cross-language pairs are served on evidence alone
    if markers_differ(r["cached"], r["query"]):
        return False  # `Verdict.marked`: negation, scope or polarity words differ
    return paraphrase.confident(r["cached"], r["query"], lang, cosine, params.reworded_bar_en,
                                params.reworded_bar_zh, params.reworded_any_verb_en)


def pair_lanes(rows: list[dict[str, Any]], params: GuardParams) -> tuple[np.ndarray, list[str]]:
    """Each pair's lane ("same_content", "reworded", or "" when the guard rejects it) and the reason."""
    lanes, reasons = [], []
    for r in rows:
        if r["cached"] == r["query"]:
            lanes.append(SAME_CONTENT)
            reasons.append("identical")
            continue
        reason, al = check(analyze(r["cached"]), analyze(r["query"]), (), params)
        lanes.append("" if reason is not None else lane_of(al))
        reasons.append(reason or "")
    return np.array(lanes), reasons


def _fmt(x: float) -> str:
    return "  -  " if x != x else f"{x:5.3f}"


COLUMNS = ("live", "same_content", "reworded", "bare")
HEADINGS = {"live": "live decision (before evidence)", "same_content": "same-content lane",
            "reworded_sure": "reworded, second opinion",
            "reworded": "reworded lane by cosine", "bare": "bare cosine"}


def report(rows: list[dict[str, Any]], hits: np.ndarray, base: np.ndarray, out: Any = None,
           lanes: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Precision / recall / false-hit per group for the live decision, each lane alone (what the
    reworded lane would serve by cosine alone if evidence opened it), and bare cosine."""
    out = out or sys.stdout
    cols = {"live": hits, **(lanes or {}), "bare": base}
    groups: dict[str, dict[str, Counts]] = defaultdict(lambda: {c: Counts() for c in cols})
    for i, r in enumerate(rows):
        reuse = bool(r["reuse"])
        keys = ["overall", f"lang={r.get('lang', '?')}", f"kind={r.get('kind', '?')}"]
        if not reuse and r.get("kind") not in UNRELATED:
            keys.append("hard negatives")
        for k in keys:
            for c, arr in cols.items():
                groups[k][c].add(bool(arr[i]), reuse)
    head = "".join(f"   {HEADINGS.get(c, c):>27}" for c in cols)
    print(f"{'':26} {'':>5}{head}", file=out)
    print(f"{'group':26} {'n':>5}" + "   {:>6} {:>6} {:>9}{:>3}".format("prec", "recall", "false-hit", "") * len(cols),
          file=out)
    order = sorted(groups, key=lambda k: (k != "overall", k != "hard negatives", not k.startswith("lang"), k))
    for k in order:
        g = groups[k]
        n = next(iter(g.values()))
        total = n.tp + n.fp + n.fn + n.tn
        cells = "".join(f"   {_fmt(g[c].precision):>6} {_fmt(g[c].recall):>6} {_fmt(g[c].false_hit_rate):>9}   "
                        for c in cols)
        print(f"{k:26} {total:5d}{cells}", file=out)
    return {k: {("guard" if c == "live" else c): _summary(v) for c, v in g.items()} for k, g in groups.items()}


def _summary(c: Counts) -> dict[str, float]:
    return {"precision": c.precision, "recall": c.recall, "false_hit_rate": c.false_hit_rate,
            "tp": c.tp, "fp": c.fp, "fn": c.fn, "tn": c.tn}


GRID = {
    "threshold": [0.86, 0.88, 0.90, 0.92, 0.94, 0.96],
    "near_copy_ratio": [0.5, 0.6, 0.7],
    "single_change_ratio": [0.3, 0.4, 0.5],
}


def cross_validate(rows: list[dict[str, Any]], sims: np.ndarray, anchor: float, base: GuardParams,
                   out: Any = None) -> list[dict[str, Any]]:
    """Leave one domain out: the threshold and the guard's ratios are tuned on every other domain
    (the best recall with precision ≥ 0.97 and hard false hits ≤ 2 %), then measured on the one left out."""
    out = out or sys.stdout
    domains = sorted({r.get("domain", "?") for r in rows})
    if len(domains) < 2:
        print("cross-validation needs at least two domains", file=out)
        return []
    y = np.array([bool(r["reuse"]) for r in rows])
    hard = np.array([not r["reuse"] and r.get("kind") not in UNRELATED for r in rows])
    dom = np.array([r.get("domain", "?") for r in rows])
    combos = [dict(zip(GRID, v, strict=True)) for v in itertools.product(*GRID.values())]
    table = []
    for combo in combos:
        params = replace(base, **{k: v for k, v in combo.items() if k != "threshold"})
        table.append(judge(rows, sims, cosine_for(combo["threshold"], anchor), params))

    def score(h: np.ndarray, m: np.ndarray) -> tuple[float, float, float, int]:
        tp, fp = int((h & y & m).sum()), int((h & ~y & m).sum())
        return (tp / (tp + fp) if tp + fp else 1.0, tp / max(1, int((y & m).sum())),
                int((h & hard & m).sum()) / max(1, int((hard & m).sum())), tp + fp)

    results = []
    for left in domains:
        test = dom == left
        fits = [(i, score(table[i], ~test)) for i in range(len(combos))]
        fits = [(i, f) for i, f in fits if f[0] >= 0.97 and f[2] <= 0.02]
        best = max(fits, key=lambda f: (f[1][1], f[1][0]))[0] if fits else 0
        p, r, fh, served = score(table[best], test)
        results.append({"domain": left, "precision": p, "recall": r, "hard_false_hit": fh, "served": served,
                        "tuned": combos[best]})
        print(f"  left out {left:20} tuned {combos[best]} -> P={p:.3f} R={r:.3f} hard-FH={fh:.3f} "
              f"({served} served)", file=out)
    arr = np.array([[x["precision"], x["recall"], x["hard_false_hit"]] for x in results])
    print(f"  leave-one-domain-out over {len(results)} domains: precision mean {arr[:, 0].mean():.3f} "
          f"min {arr[:, 0].min():.3f}; recall mean {arr[:, 1].mean():.3f} min {arr[:, 1].min():.3f}; "
          f"hard false-hit max {arr[:, 2].max():.3f}", file=out)
    return results


def default_sets() -> list[tuple[str, list[dict[str, Any]]]]:
    """The repository's own data: the dev pairs, then our own pairs' tuning split and eleven held-out splits."""
    from gateway_dev.bench.semantic_pairs import own_pairs

    return [("dev", load_pairs(EVAL / "semantic_pairs_dev.jsonl")), ("own-tune", own_pairs("tune")),
            ("own-heldout", own_pairs("heldout")), ("own-heldout2", own_pairs("heldout2")),
            ("own-heldout3", own_pairs("heldout3")), ("own-heldout4", own_pairs("heldout4")),
            ("own-heldout5", own_pairs("heldout5")), ("own-heldout6", own_pairs("heldout6")),
            ("own-heldout7", own_pairs("heldout7")), ("own-heldout8", own_pairs("heldout8")),
            ("own-heldout9", own_pairs("heldout9")), ("own-heldout10", own_pairs("heldout10")),
            ("own-heldout11", own_pairs("heldout11"))]


def structure_cost(rows: list[dict[str, Any]], limit: int = 200) -> dict[str, float]:
    """Milliseconds to parse one question cold (the reworded lane's structure check), per language."""
    from gateway.semantic import structure

    out: dict[str, float] = {}
    for lang in ("en", "zh"):
        texts = [r["query"] for r in rows if r.get("lang") == lang][:limit]
        if not texts or structure.frame(texts[0], lang) is None:
            continue
        structure.frame.cache_clear()
        started = time.perf_counter()
        for t in texts:
            structure.frame(t, lang)
        out[lang] = 1000 * (time.perf_counter() - started) / len(texts)
    return out


def evaluate(name: str, rows: list[dict[str, Any]], sims: np.ndarray, raw: float, params: GuardParams,
             out: Any) -> dict[str, Any]:
    from gateway.semantic import structure

    started = time.perf_counter()
    hits = judge(rows, sims, raw, params)
    decide_ms = 1000 * (time.perf_counter() - started) / max(1, len(rows))
    lanes, _ = pair_lanes(rows, params)
    same = hits & (lanes == SAME_CONTENT)
    reworded = (lanes == REWORDED) & (sims >= raw)
    sure = hits & reworded  # served before evidence: second opinion confident, structure agrees
    agree = np.array([bool(rw) and structure.agree(r["cached"], r["query"], str(r.get("lang"))) is True
                      for r, rw in zip(rows, reworded, strict=True)])
    print(f"\n== {name} ({len(rows)} pairs; decision {decide_ms:.2f} ms a pair)", file=out)
    figures = report(rows, hits, sims >= raw, out=out,
                     lanes={"same_content": same, "reworded_sure": sure, "reworded": reworded,
                            "reworded+structure": agree})
    return {"groups": figures, "decide_ms": decide_ms}


def side_by_side(results: dict[str, dict[str, Any]], out: Any) -> None:
    print("\nside by side (live decision before evidence | reworded lane by cosine, if evidence opened it)",
          file=out)
    print(f"{'set':14} {'group':16} {'P':>6} {'R':>6} {'FH':>6}   {'rw P':>6} {'rw R':>6}", file=out)
    for name, res in results.items():
        for group in ("overall", "lang=en", "lang=zh", "hard negatives"):
            g = res["groups"].get(group)
            if g is None:
                continue
            live, rw = g["guard"], g["reworded"]
            print(f"{name:14} {group:16} {_fmt(live['precision']):>6} {_fmt(live['recall']):>6} "
                  f"{_fmt(live['false_hit_rate']):>6}   {_fmt(rw['precision']):>6} {_fmt(rw['recall']):>6}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="llm-cache-gateway bench semantic", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", action="append", type=Path, default=None,
                    help="labelled pairs (JSON lines); repeatable. Default: the repository's dev pairs and "
                         "its own tuning and held-out splits, side by side")
    ap.add_argument("--threshold", type=float, default=None,
                    help="policy similarity threshold (default: the policy default)")
    ap.add_argument("--config", default=None, help="settings YAML (embedding model, semantic.params)")
    ap.add_argument("--cross-validate", action="store_true",
                    help="leave one domain out (dev and own tuning split; the held-out split is never used)")
    ap.add_argument("--at-precision", type=float, default=0.90, help="ceilings: best recall at this precision")
    ap.add_argument("--at-recall", type=float, default=0.40, help="ceilings: precision at this recall")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = ap.parse_args(list(argv) if argv is not None else None)

    from gateway_dev.bench.semantic_ceilings import ceilings  # it builds on this module's decision

    settings = Settings.load(args.config)
    options = SemanticOptions.from_params(settings.semantic.params)
    threshold = args.threshold if args.threshold is not None else SemanticCachePolicy().threshold
    if not 0.0 <= threshold <= 1.0:
        ap.error("--threshold must be between 0 and 1")
    sets = [(str(p), load_pairs(p)) for p in args.pairs] if args.pairs else default_sets()
    everything = [r for _, rows in sets for r in rows]
    sims_all, name, anchor, seconds = cosines(everything, settings)
    if options.anchor_cosine is not None:
        anchor = options.anchor_cosine
    raw = cosine_for(threshold, anchor)
    print(f"embedder: {name} (anchor cosine {anchor:.2f}; {seconds:.1f}s to load and embed)")
    print(f"threshold: similarity {threshold:.2f} = cosine {raw:.3f}; guard: {options.guard}")
    results: dict[str, dict[str, Any]] = {}
    at = 0
    for set_name, rows in sets:
        sims = sims_all[at : at + len(rows)]
        at += len(rows)
        results[set_name] = evaluate(set_name, rows, sims, raw, options.guard, sys.stdout)
        results[set_name]["ceilings"] = ceilings(rows, sims, options.guard, args.at_precision, args.at_recall)
    side_by_side(results, sys.stdout)
    costs = structure_cost(everything)
    print("\nstructure check (reworded lane only, after the evidence allowed a hit): "
          + ", ".join(f"{lang} {ms:.2f} ms a question cold" for lang, ms in costs.items()))
    cv = None
    if args.cross_validate:
        cv_rows = [r for n, rows in sets if "heldout" not in n for r in rows]
        cv_sims = np.concatenate([sims_all[sum(len(x) for _, x in sets[:i]):][: len(rows)]
                                  for i, (n, rows) in enumerate(sets) if "heldout" not in n])
        print("\nleave-one-domain-out (tuned on the other domains, measured on the one left out)")
        cv = cross_validate(cv_rows, cv_sims, anchor, options.guard)
    if args.json:
        args.json.write_text(json.dumps({"threshold": threshold, "cosine": raw, "embedder": name,
                                         "sets": results, "structure_ms": costs, "cross_validation": cv},
                                        indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
