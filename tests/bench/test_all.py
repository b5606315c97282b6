"""`bench all`: the document it writes (summary, plots, one marked section per benchmark, sections
kept under `--only`), and one real benchmark run through its subprocess path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway_dev.bench import all as bench_all


def _bench(bid: str, **result: object) -> bench_all.Bench:
    b = next(x for x in bench_all.benchmarks() if x.id == bid)
    b.result = {"command": f"llm-cache-gateway bench {b.cli}", "load_before": 1.0, "load_after": 1.5,
                "seconds": 3.0, "rc": 0, "status": "ok", **result}
    return b


def test_benchmarks_cover_every_issue_in_order() -> None:
    ids = [b.id for b in bench_all.benchmarks()]
    assert ids == ["core", "response-cache", "semantic-dev", "semantic-qqp", "semantic-lookup", "cost", "prefix",
                   "routing", "routing-peers", "usage", "emulator", "protocols", "litellm", "startup"]
    from gateway.cli import BENCHMARKS

    assert {b.cli for b in bench_all.benchmarks()} <= set(BENCHMARKS)


def test_document_has_summary_sections_and_keeps_the_others_under_only(tmp_path: Path) -> None:
    core = _bench("core", markdown="# Benchmarks\n\nintro\n\n## Gateway core: x\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    usage = _bench("usage", output="usage stage after(), 2000 calls per side\n  added p50: 0.01 ms")
    failed = _bench("emulator", status="failed", rc=2, output="Traceback ...\nboom")
    doc = bench_all.document([core, usage, failed], False, ["--x"], "", tmp_path / "img")
    assert doc.startswith("# Benchmarks\n")
    assert "| Gateway core: added latency on the proxy path | ok | 3 | 1.0 | `llm-cache-gateway bench core` |" in doc
    assert "| 1 | 2 |" in doc and "intro" not in doc.split("<!-- bench:core", 1)[1]
    assert "```text\nusage stage after()" in doc
    assert "**failed** (exit 2)" in doc and "boom" in doc
    # a later `--only usage` run replaces usage and keeps core and emulator as they were
    usage2 = _bench("usage", output="added p50: 0.02 ms")
    doc2 = bench_all.document([usage2], False, ["--only", "usage"], doc, tmp_path / "img")
    assert "added p50: 0.02 ms" in doc2 and "added p50: 0.01 ms" not in doc2
    assert "| 1 | 2 |" in doc2 and "boom" in doc2
    order = [m.group(1) for m in re.finditer(r"<!-- bench:(\S+) ", doc2)]
    assert order == ["core", "usage", "emulator"]


def test_plots_are_embedded_when_their_data_is_there(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib comes with the `bench` extra")
    cost = _bench("cost", output="| vendor | mode | T | cached share |\n|---|---|---|---|\n"
                                 "| openai | on | 5 | 60.0% |\n| openai | on | 10 | 80.0% |\n")
    doc = bench_all.document([cost], False, [], "", tmp_path / "img")
    assert "![Cached share of prompt tokens against T (bench cost)](img/cached-share.png)" in doc
    assert (tmp_path / "img" / "cached-share.png").stat().st_size > 5000


def test_run_one_runs_the_benchmark_command(tmp_path: Path) -> None:
    b = next(x for x in bench_all.benchmarks() if x.id == "protocols")
    b.quick = ["--repeat", "1", "--deltas", "20"]
    with open(tmp_path / "log", "w") as log:
        bench_all.run_one(b, True, tmp_path, 300, log)
    assert b.result["status"] == "ok", b.result.get("output", "")[-2000:]
    assert b.result["command"] == "llm-cache-gateway bench protocols --repeat 1 --deltas 20"
    assert "stream parsing" in b.result["output"]


def test_quick_runs_skip_what_has_no_quick_size(tmp_path: Path) -> None:
    b = next(x for x in bench_all.benchmarks() if x.id == "semantic-qqp")
    with open(tmp_path / "log", "w") as log:
        bench_all.run_one(b, True, tmp_path, 300, log)
    assert b.result["status"] == "skipped"


def test_quick_routing_run_claims_no_targets() -> None:
    routing = next(b for b in bench_all.benchmarks() if b.id == "routing")
    assert "--no-targets" in routing.args(quick=True) and "--no-targets" not in routing.args(quick=False)


def test_every_input_file_lives_in_the_repository() -> None:
    root = Path(bench_all.__file__).resolve().parents[2]
    for b in bench_all.benchmarks():
        for arg in [*b.full, *(b.quick or [])]:
            if arg.endswith((".jsonl", ".json", ".csv")):
                path = Path(arg).resolve()
                assert path.is_relative_to(root), f"{b.id} reads {arg}, outside the repository"
                assert path.exists(), f"{b.id}: {arg} is missing"


def test_a_crash_or_a_missed_target_fails_the_run_and_skips_are_named() -> None:
    ok, skipped = _bench("core"), _bench("semantic-qqp", status="skipped", note="not part of a --quick run")
    assert bench_all.outcome([ok, skipped]) == (0, "bench all: ok: core; skipped: semantic-qqp — ok")
    code, line = bench_all.outcome([ok, _bench("routing", status="verdict", rc=1)])
    assert code == 1 and "verdict: routing" in line and "FAILED" in line
    assert bench_all.outcome([_bench("semantic-dev", status="failed", rc=2)])[0] == 1
