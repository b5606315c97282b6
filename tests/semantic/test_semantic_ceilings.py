"""The ceilings of `bench semantic` (`gateway_dev.bench.semantic_ceilings`): upper bounds at the best
threshold chosen after the fact, from one guard pass per pair."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.semantic import guard
from gateway_dev.bench import semantic as bench
from gateway_dev.bench import semantic_ceilings as ceil

from .test_bench import PAIRS


def test_guard_scores_reproduce_the_live_decision_at_every_threshold() -> None:
    """The ceilings rest on `guard_scores`: one guard pass per pair must equal `decide` at any threshold."""
    more = [("How do I turn on dark mode?", "How do I turn off dark mode?", False, "operation_swap"),
            ("What is the refund window?", "How long do I have to ask for a refund?", True, "paraphrase"),
            ("Can I pay by card?", "Can I pay by card?", True, "identical")]
    rows = [{"cached": c, "query": q, "reuse": r, "kind": k} for c, q, r, k in [*PAIRS, *more]]
    rng = np.random.default_rng(7)
    params = guard.GuardParams()
    for _ in range(5):
        sims = rng.uniform(0.3, 1.0, len(rows))
        scores = ceil.guard_scores(rows, sims, params)
        for t in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
            live = bench.judge(rows, sims, t, params)
            assert list(scores >= t) == list(live)


def test_auc_and_operating_points_by_hand() -> None:
    y = np.array([True, True, False, True, False])
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    assert ceil.roc_auc(y, s) == pytest.approx(5 / 6)  # 5 of the 6 (pos, neg) pairs ordered right
    assert ceil.roc_auc(y, np.ones(5)) == pytest.approx(0.5)  # ties count half
    # thresholds: 0.9 (P 1, R 1/3), 0.8 (1, 2/3), 0.7 (2/3, 2/3), 0.6 (3/4, 1), 0.5 (3/5, 1)
    op = ceil.operating_points(y, s, at_precision=0.9, at_recall=0.9)
    assert op["recall_at_precision"] == pytest.approx(2 / 3)
    assert op["precision_at_recall"] == pytest.approx(3 / 4)
    ties = ceil.operating_points(y, np.array([0.9, 0.8, 0.8, 0.6, -np.inf]), 0.9, 0.9)
    assert ties["recall_at_precision"] == pytest.approx(1 / 3)  # 0.8 admits a negative with the positive
    assert ties["precision_at_recall"] == pytest.approx(3 / 4)  # the -inf pair never hits
