"""`semantic calibrate`: thresholds set on one half of the QQP sample hold their bound on the other."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from gateway.semantic.calibrate import calibrate, decision_scores, load_pairs, print_table
from gateway.semantic.evidence import upper_bound
from gateway.semantic.guard import GuardParams

from ._helpers import use_backend

QQP = Path(__file__).resolve().parents[1] / "data" / "eval" / "qqp_pairs_sample.jsonl"


def test_thresholds_from_one_half_hold_their_bound_on_the_other() -> None:
    rows = load_pairs(QQP)
    backend = use_backend()
    texts = sorted({r["cached"] for r in rows} | {r["query"] for r in rows})
    vectors = dict(zip(texts, backend.encode(texts), strict=True))
    cos = np.array([float(vectors[r["cached"]] @ vectors[r["query"]]) for r in rows])
    scores = decision_scores(rows, cos, GuardParams())
    first, second = np.arange(0, len(rows), 2), np.arange(1, len(rows), 2)
    for target in (0.60, 0.70):
        [cal] = calibrate([rows[i] for i in first], scores[first], backend.anchor, target)
        assert cal.threshold is not None and cal.lower_bound >= target
        served = scores[second] >= cal.cosine
        y = np.array([bool(rows[i]["reuse"]) for i in second])
        assert served.sum() >= 10
        tp, n = int((served & y).sum()), int(served.sum())
        # within its stated bound: the second half's own 95 % interval reaches the stated lower limit
        assert upper_bound(tp, n, 0.95) >= cal.lower_bound
        assert tp / n >= target - 0.05
    out = io.StringIO()
    print_table(calibrate([rows[i] for i in first], scores[first], backend.anchor, 0.99), 0.99, 0.95, out)
    assert "unreachable" in out.getvalue()
