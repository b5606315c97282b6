"""`bench semantic` runs the live decision function over labelled pairs and prints both columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.bench import semantic as bench
from gateway.semantic import guard

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
