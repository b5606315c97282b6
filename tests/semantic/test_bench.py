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
    assert "live decision (before evidence)" in out and "bare cosine" in out and "kind=number_change" in out
    assert "same-content lane" in out and "reworded lane by cosine" in out
    assert len(calls) == len(PAIRS)  # the live function judged every pair
    figures = json.loads(out_json.read_text())["sets"][str(path)]["groups"]
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


EVAL = Path(__file__).resolve().parents[1] / "data" / "eval"


def _eval_rows(name: str) -> list[dict[str, object]]:
    return bench.load_pairs(EVAL / name)


def _figures(rows: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    backend = use_backend()
    texts = sorted({str(r["cached"]) for r in rows} | {str(r["query"]) for r in rows})
    vectors = dict(zip(texts, backend.encode(texts), strict=True))
    sims = np.array([float(vectors[str(r["cached"])] @ vectors[str(r["query"])]) for r in rows])
    hits = bench.judge(rows, sims, guard.cosine_for(0.90, backend.anchor), guard.GuardParams())
    figures = bench.report(rows, hits, sims >= 0.0, out=io.StringIO())
    return {k: v["guard"] for k, v in figures.items()}


# measured before any evidence (docs/semantic-cache.md), rounded down, with the reworded lane waiting
# for evidence (the default). Held-out 6, 7 and 8 meet them since the placement rules written after
# their first looks, held-out 9 since the default changed after its first look, and held-out 10
# since the rules read from its first look's two false hits: they check those
# rules now, they do not measure them blind (docs/semantic-cache.md). Held-out 11's floor is its blind
# first look, less the one typo pair the later phrase rewrites lost (docs/semantic-cache.md).
RECALL_FLOOR = {"dev": 0.18, "heldout": 0.37, "heldout2": 0.41, "heldout3": 0.38, "heldout4": 0.30,
                "heldout5": 0.31, "heldout6": 0.41, "heldout7": 0.96, "heldout8": 0.53, "heldout9": 0.22,
                "heldout10": 0.40, "heldout11": 0.21}


@pytest.mark.parametrize("split", list(RECALL_FLOOR))
def test_precision_targets_hold_before_any_evidence(split: str) -> None:
    """Before any evidence (the default state): precision ≥ 0.97 overall and ≥ 0.95 per language,
    hard false hits ≤ 2 %, on the dev pairs and on our own held-out splits (other domains). Recall is
    pinned at what the same-content lane measures (dev 0.183; held-out 1–6 0.303–0.418, 9 0.222): the recall
    targets (0.60 dev, 0.40 unseen) are not met before evidence (docs/semantic-cache.md)."""
    from gateway_dev.bench.semantic_pairs import own_pairs

    rows = _eval_rows("semantic_pairs_dev.jsonl") if split == "dev" else own_pairs(split)
    g = _figures(rows)  # type: ignore[arg-type]
    assert g["overall"]["precision"] >= 0.97
    assert g["lang=en"]["precision"] >= 0.95 and g["lang=zh"]["precision"] >= 0.95
    assert g["hard negatives"]["false_hit_rate"] <= 0.02
    assert g["overall"]["recall"] >= RECALL_FLOOR[split]


@pytest.mark.parametrize(("name", "digest"), [
    ("source_b.txt", "1342cf551d35b72d40bbbc14b1d2b8fc2b3481f434cce2a871ea89633ec67c9c"),
    ("source_c.txt", "6f0b13e1da42905e540afb78bc07c62ce1c132335ad90e0a842d1788cc8c2db4"),
    ("source_d.txt", "6afca3fa38a9d7bb41e52e2c99aef505c0de48ac52983f8a27733550435c393e"),
    ("source_e.txt", "475d4cc874417de5060330b54ac1db457f6ac8c1efaedb22be37ecb34cf56e47"),
    ("source_f.txt", "37ed0027059934614732b749caa66038c999be71a1d1a674f3ae191df4580b13"),
    ("source_g.txt", "e3f3094345bfe7365c11fbb76d3c0dbf3aa706f43c6634a7f8826742a0ee9bef"),
    ("source_h.txt", "3133b8c9731015702b7ffa98619d28dbda523ec634130890cbd90cd1c962c0e8"),
    ("source_i.txt", "9796bea6a24a7874b4b277c3097e43998493821bf21f58089700cda0354572cc"),
    ("heldout8.jsonl", "4c5f501f5e415842b364bf8fbc27ebdc5e8f7c6e1f9c0a2a42ec7388a5647831"),
    ("source_j.txt", "a6660458b88223ea3dfe34bc6a449f61f5cc5a24626d8f6ee839e438e099bf6b"),
    ("heldout9.jsonl", "fa8de956b3e2aa69581988620736edac499b55d6041175b08ff1c6391aa29587"),
    ("source_k.txt", "af52071e6b939fa88f588dc695007752f5fd2a3097bd77bc0eb2fe258f8b1793"),
    ("heldout10.jsonl", "e44a6969458008b38c64f184f4e054d65a8e661b786e0fc171fd16e839a7e60f"),
    ("source_l.txt", "9e8769b5f70264f1980bd62a2a93e6bdbf19fdec2d6c18bfa7907c7a934d99f8"),
    ("heldout11.jsonl", "52bc3d4dba360dd55ac6762560d016c0894aa951975adc8a7984971ff63271e8"),
])
def test_own_heldout_splits_are_frozen(name: str, digest: str) -> None:
    """The held-out splits were written before the method they measure was tuned and must not change."""
    import hashlib

    from gateway_dev.bench.semantic_pairs import OWN_DIR

    assert hashlib.sha256((OWN_DIR / name).read_bytes()).hexdigest() == digest


def test_guard_lets_through_under_40_percent_of_qqp_duplicates() -> None:
    """Why the QQP target (precision ≥ 0.90 at recall ≥ 0.40) is out of reach of any embedder with
    the default guard: it rejects most Quora duplicates whatever their cosine (docs/semantic-cache.md)."""
    rows = [r for r in _eval_rows("qqp_pairs_sample.jsonl") if r["reuse"]]
    lanes, _ = bench.pair_lanes(rows, guard.GuardParams())
    ceiling = float((lanes != "").mean())  # both lanes, whatever the cosine and the evidence
    assert 0.25 < ceiling < 0.40  # measured 0.353 before the lanes; the guard's checks are unchanged
