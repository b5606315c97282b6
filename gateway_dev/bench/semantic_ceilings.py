"""The ceilings of `llm-cache-gateway bench semantic`: what the best threshold, chosen after the fact,
would reach (upper bounds for diagnosis, never settings).

Bare cosine's ROC AUC, the best recall it reaches at a precision and its precision at a recall; the
same for the live decision (guard + cosine) over every threshold, from one guard pass per pair
(`guard_scores`); and the share of reusable pairs the guard lets through at all, whatever the cosine.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from gateway.semantic.guard import REWORDED, SAME_CONTENT, GuardParams
from gateway_dev.bench.semantic import confident_pair, pair_lanes, roles_kept


def guard_scores(rows: list[dict[str, Any]], sims: np.ndarray, params: GuardParams) -> np.ndarray:
    """Each pair's cosine as the live decision sees it before any evidence; -inf when it never hits
    (the guard rejects it, or it is reworded: that lane needs evidence).

    The decision hits at raw threshold t exactly when the pair is same-content (or identical) and
    cosine ≥ t − same_content_margin, or reworded with a confident second opinion (which does not
    depend on t) and cosine ≥ t; the lane does not depend on the cosine. So one pass per pair gives
    the decision at every threshold: hit(t) ⇔ score ≥ t (tests/semantic/test_bench.py checks this
    against `judge`).
    """
    lanes, _ = pair_lanes(rows, params)
    margin = params.same_content_margin
    sure = np.array([lane == REWORDED and confident_pair(r, float(c), params)
                     for r, c, lane in zip(rows, sims, lanes, strict=True)], dtype=bool)
    kept = np.array([lane != SAME_CONTENT or roles_kept(r) for r, lane in zip(rows, lanes, strict=True)])
    return np.where((lanes == SAME_CONTENT) & kept, sims + margin, np.where(sure, sims, -np.inf))


def roc_auc(y: np.ndarray, scores: np.ndarray) -> float:
    """Mann-Whitney AUC with ties counted half (numpy only: no scikit-learn in the runtime deps)."""
    y = np.asarray(y, dtype=bool)
    pos, neg = int(y.sum()), int((~y).sum())
    if not pos or not neg:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # average 1-based rank of each tie group
    return float((ranks[y].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def operating_points(y: np.ndarray, scores: np.ndarray, at_precision: float,
                     at_recall: float) -> dict[str, float]:
    """The best threshold after the fact: max recall with precision ≥ at_precision, and the
    precision at recall ≥ at_recall (nan when unreachable: pairs scored -inf never hit)."""
    y = np.asarray(y, dtype=bool)
    finite = np.isfinite(scores)
    if not finite.any() or not y.any():
        return {"recall_at_precision": 0.0, "precision_at_recall": float("nan")}
    order = np.argsort(-scores[finite], kind="stable")
    s, hit = scores[finite][order], y[finite][order]
    last = np.r_[s[1:] != s[:-1], True]  # a threshold sits after the last pair of each tie group
    tp = np.cumsum(hit)[last]
    n = np.arange(1, len(s) + 1)[last]
    precision, recall = tp / n, tp / int(y.sum())
    ok = precision >= at_precision
    reach = recall >= at_recall
    return {"recall_at_precision": float(recall[ok].max()) if ok.any() else 0.0,
            "precision_at_recall": float(precision[reach].max()) if reach.any() else float("nan")}


def ceilings(rows: list[dict[str, Any]], sims: np.ndarray, params: GuardParams, at_precision: float = 0.90,
             at_recall: float = 0.40, out: Any = None) -> dict[str, Any]:
    out = out or sys.stdout
    y = np.array([bool(r["reuse"]) for r in rows])
    live = guard_scores(rows, sims, params)
    passes = np.isfinite(live)
    figures = {
        "bare_auc": roc_auc(y, sims),
        "bare": operating_points(y, sims, at_precision, at_recall),
        "guard": operating_points(y, live, at_precision, at_recall),
        "guard_recall_ceiling": float((passes & y).sum() / max(1, int(y.sum()))),
        "guard_pass_precision": float((passes & y).sum() / max(1, int(passes.sum()))),
    }
    print("\nceilings (best threshold chosen after the fact: upper bounds, not settings)", file=out)
    print(f"  bare cosine: ROC AUC {figures['bare_auc']:.3f}; best recall at precision ≥ {at_precision:.2f}: "
          f"{figures['bare']['recall_at_precision']:.3f}; precision at recall ≥ {at_recall:.2f}: "
          f"{_reach(figures['bare']['precision_at_recall'])}", file=out)
    print(f"  guard + cosine: best recall at precision ≥ {at_precision:.2f}: "
          f"{figures['guard']['recall_at_precision']:.3f}; precision at recall ≥ {at_recall:.2f}: "
          f"{_reach(figures['guard']['precision_at_recall'])}", file=out)
    print(f"  guard alone (cosine ignored): lets through {figures['guard_recall_ceiling']:.3f} of the reusable "
          f"pairs (precision {figures['guard_pass_precision']:.3f}) — no threshold or embedder gets more recall "
          f"with these guard settings", file=out)
    return figures


def _reach(x: float) -> str:
    return "unreachable" if x != x else f"{x:.3f}"
