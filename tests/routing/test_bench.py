"""`bench routing` end to end at a tiny scale (slow: it starts two emulator subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway_dev.bench.routing import main
from gateway_dev.bench.routing_workloads import make_workloads


def test_workloads_have_the_documented_shape() -> None:
    wl = make_workloads(0.25, seed=3)
    a, b, c = wl["a"], wl["b"], wl["c"]
    assert all(5 <= 1 + len(s.followups) <= 30 for s in a.sessions)
    assert len({s.messages[0]["content"] for s in a.sessions}) == 1  # one agent prompt shared by all sessions
    groups = {s.messages[0]["content"] for s in b.sessions}
    assert len(b.sessions) == 6 * len(groups)
    assert all(len(s.messages) == 1 and not s.followups for s in c.one_offs)
    assert 0.19 <= len(c.one_offs) / c.requests <= 0.21  # 20% of the requests


@pytest.mark.slow
def test_bench_runs_and_reports_every_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "routing.json"
    code = main(["--workloads", "b", "--scale", "0.05", "--concurrency", "4", "--via", "gateway",
                 "--no-targets", "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["checks"] == {} and data["targets_checked"] is False
    figures = data["results"]["b"]
    assert code == (1 if any(f["errors"] for f in figures.values()) else 0)
    assert set(figures) == {"cache_aware", "round_robin", "least_loaded", "consistent_hash", "bound"}
    assert all(f["errors"] == {} for f in figures.values())
    assert figures["bound"]["hit_rate"] >= figures["round_robin"]["hit_rate"]
    assert all(f["ttft_mean"] > 0 and f["ttft_p90"] >= f["ttft_p50"] for f in figures.values())
    printed = capsys.readouterr().out
    assert "cache_aware decisions:" in printed
    # what ours runs that the peers do not, and the TTFT spread beside the p50
    assert "default layers on the path: usage records, response cache" in printed
    assert "share under 100 ms" in printed


@pytest.mark.slow
def test_bench_runs_ours_as_its_own_gateway_process(tmp_path: Path) -> None:
    """The default target: `llm-cache-gateway serve` in a subprocess; its decisions come from its /metrics."""
    out = tmp_path / "routing.json"
    main(["--workloads", "b", "--scale", "0.05", "--concurrency", "4", "--policies", "cache_aware",
          "--no-targets", "--json", str(out)])
    ours = json.loads(out.read_text())["results"]["b"]["cache_aware"]
    assert ours["errors"] == {}
    # Every request of the workload, and the readiness probe the bench sends first in neither count
    requests = make_workloads(0.05, 7)["b"].requests
    assert sum(ours["reasons"].values()) == sum(ours["per_replica"].values()) == requests
    assert ours["cpu_ms_per_request"] > 0 and ours["partial"] is False
    assert set(ours["reasons"]) <= {"prefix", "least_loaded", "load_guard", "session"}


@pytest.mark.slow
def test_a_budget_stops_a_run_early_and_reports_it_partial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--budget: no new session after the budget; the run is partial and nothing is checked against it."""
    out = tmp_path / "routing.json"
    code = main(["--workloads", "b", "--scale", "0.05", "--concurrency", "1", "--policies", "cache_aware",
                 "--no-bound", "--budget", "0.2", "--json", str(out)])
    data = json.loads(out.read_text())
    figures = data["results"]["b"]
    assert set(figures) == {"cache_aware"}
    ours = figures["cache_aware"]
    assert ours["partial"] is True and 0 < sum(ours["per_replica"].values()) < make_workloads(0.05, 7)["b"].requests
    assert data["checks"] == {} and code == 0
    assert "(partial: stopped at --budget" in capsys.readouterr().out


@pytest.mark.slow
def test_an_open_loop_offers_every_router_the_same_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "routing.json"
    code = main(["--workloads", "b", "--scale", "0.05", "--via", "router", "--policies", "cache_aware,round_robin",
                 "--rate", "8", "--no-bound", "--no-targets", "--json", str(out)])
    figures = json.loads(out.read_text())["results"]["b"]
    assert code == 0 and "sessions started at 8/s (open loop)" in capsys.readouterr().out
    wl = make_workloads(0.05, seed=7)["b"]
    for f in figures.values():  # every request sent and answered; the pace, not the answers, sets the wall time
        assert sum(f["per_replica"].values()) == wl.requests and f["errors"] == {}
        assert f["throughput_rps"] <= 8 * 1.1
