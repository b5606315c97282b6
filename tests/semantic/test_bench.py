"""`bench semantic` runs the live decision function over labelled pairs and prints both columns."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from gateway.semantic import guard
from gateway_dev.bench import semantic as bench

from ._helpers import use_backend

PAIRS = [
    ("How do I reset my router?", "how do i reset my ruoter", True, "typo"),
    ("How do I reset my router?", "How do I reset my modem?", False, "entity_swap"),
    ("Can I pay by card?", "Is paying by card possible?", True, "paraphrase"),
    ("Is delivery free over 30 euros?", "Is delivery free over 50 euros?", False, "number_change"),
    ("怎么开启夜间模式？", "怎么关闭夜间模式？", False, "operation_swap"),
    ("怎么修改收货地址？", "收货地址怎么修改？", True, "reorder"),
]


def test_bench_prints_guard_and_bare_cosine(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps({"id": str(i), "lang": "zh" if "怎么" in c else "en", "domain": "d",
                                          "cached": c, "query": q, "reuse": r, "kind": k})
                              for i, (c, q, r, k) in enumerate(PAIRS)))
    calls: list[tuple[str, str]] = []
    live = guard.decide

    def spy(cached: str, query: str, *a: object, **kw: object) -> guard.Verdict:
        calls.append((cached, query))
        return live(cached, query, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(bench, "decide", spy)
    out_json = tmp_path / "out.json"
    assert bench.main(["--pairs", str(path), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "guard (live decision)" in out and "bare cosine" in out and "kind=number_change" in out
    assert len(calls) == len(PAIRS)  # the live function judged every pair
    figures = json.loads(out_json.read_text())["groups"]
    assert figures["hard negatives"]["guard"]["fp"] == 0
    assert figures["overall"]["guard"]["tp"] >= 2
    assert bench.decide is spy and guard.decide is live


def test_bench_refuses_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"cached": "a"}))
    with pytest.raises(ValueError, match="missing field"):
        bench.main(["--pairs", str(bad)])
    with pytest.raises(SystemExit):
        bench.main(["--pairs", str(bad), "--threshold", "2"])


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
        scores = bench.guard_scores(rows, sims, params)
        for t in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
            live = bench.judge(rows, sims, t, params)
            assert list(scores >= t) == list(live)


def test_auc_and_operating_points_by_hand() -> None:
    y = np.array([True, True, False, True, False])
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    assert bench.roc_auc(y, s) == pytest.approx(5 / 6)  # 5 of the 6 (pos, neg) pairs ordered right
    assert bench.roc_auc(y, np.ones(5)) == pytest.approx(0.5)  # ties count half
    # thresholds: 0.9 (P 1, R 1/3), 0.8 (1, 2/3), 0.7 (2/3, 2/3), 0.6 (3/4, 1), 0.5 (3/5, 1)
    op = bench.operating_points(y, s, at_precision=0.9, at_recall=0.9)
    assert op["recall_at_precision"] == pytest.approx(2 / 3)
    assert op["precision_at_recall"] == pytest.approx(3 / 4)
    ties = bench.operating_points(y, np.array([0.9, 0.8, 0.8, 0.6, -np.inf]), 0.9, 0.9)
    assert ties["recall_at_precision"] == pytest.approx(1 / 3)  # 0.8 admits a negative with the positive
    assert ties["precision_at_recall"] == pytest.approx(3 / 4)  # the -inf pair never hits


EVAL = Path(__file__).resolve().parents[1] / "data" / "eval"


def _eval_rows(name: str) -> list[dict[str, object]]:
    return bench.load_pairs(EVAL / name)


def test_dev_set_targets_hold_with_the_default_embedder() -> None:
    """Precision ≥ 0.97, hard false hits ≤ 2%, recall ≥ 0.60 (≥ 0.50 in English and in Chinese)."""
    rows = _eval_rows("semantic_pairs_dev.jsonl")
    backend = use_backend()
    texts = sorted({r["cached"] for r in rows} | {r["query"] for r in rows})
    vectors = dict(zip(texts, backend.encode(texts), strict=True))
    sims = np.array([float(vectors[r["cached"]] @ vectors[r["query"]]) for r in rows])
    hits = bench.judge(rows, sims, guard.cosine_for(0.90, backend.anchor), guard.GuardParams())
    figures = bench.report(rows, hits, sims >= 0.0, out=io.StringIO())
    g = {k: v["guard"] for k, v in figures.items()}
    assert g["overall"]["precision"] >= 0.97 and g["overall"]["recall"] >= 0.60
    assert g["hard negatives"]["false_hit_rate"] <= 0.02
    assert g["lang=en"]["recall"] >= 0.50 and g["lang=zh"]["recall"] >= 0.50


def test_guard_lets_through_under_40_percent_of_qqp_duplicates() -> None:
    """Why the QQP target (precision ≥ 0.90 at recall ≥ 0.40) is out of reach of any embedder with
    the default guard: it rejects most Quora duplicates whatever their cosine (docs/semantic-cache.md)."""
    rows = [r for r in _eval_rows("qqp_pairs_sample.jsonl") if r["reuse"]]
    scores = bench.guard_scores(rows, np.ones(len(rows)), guard.GuardParams())
    ceiling = float(np.isfinite(scores).mean())
    assert 0.25 < ceiling < 0.40  # measured 0.353
