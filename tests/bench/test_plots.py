"""The PNG plots of docs/benchmarks.md, drawn from data shaped as the benchmarks produce it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway_dev.bench import plots

pytest.importorskip("matplotlib", reason="matplotlib comes with the `bench` extra (pip install -e '.[bench]')")

COST_OUTPUT = """
| vendor | mode | T | requests | prompt tokens | cached share | (T−1)/(T+1) | share ÷ theory | cost USD |
|---|---|---|---|---|---|---|---|---|
| openai | off | 5 | 10 | 44171 | 0.0% | 66.7% | 0.00 | 0.1167 |
| openai | on | 5 | 10 | 44784 | 65.5% | 66.7% | 0.98 | 0.0814 |
| openai | off | 10 | 20 | 96246 | 0.0% | 81.8% | 0.00 | 0.2538 |
| openai | on | 10 | 20 | 96998 | 84.6% | 81.8% | 1.03 | 0.1526 |

Target, cached share ≥ 0.9 × (T−1)/(T+1)
"""


def _png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_parse_table_finds_the_table_with_the_column() -> None:
    rows = plots.parse_table("intro\n" + COST_OUTPUT, "cached share")
    assert len(rows) == 4
    assert rows[1] == {"vendor": "openai", "mode": "on", "T": "5", "requests": "10", "prompt tokens": "44784",
                       "cached share": "65.5%", "(T−1)/(T+1)": "66.7%", "share ÷ theory": "0.98", "cost USD": "0.0814"}
    assert plots.parse_table(COST_OUTPUT, "no such column") == []


def test_cached_share_plot(tmp_path: Path) -> None:
    _png(plots.cached_share(plots.parse_table(COST_OUTPUT, "cached share"), tmp_path / "share.png"))


def test_latency_cdf_plot(tmp_path: Path) -> None:
    lat = {k: [0.001 * (i + 1) for i in range(50)] for k in
           ("direct_miss", "gateway_miss", "litellm_miss", "gateway_hit", "litellm_hit")}
    _png(plots.latency_cdf({"latencies": lat}, tmp_path / "cdf.png"))


def test_routing_plot(tmp_path: Path) -> None:
    one = {"hit_rate": 0.9, "ttft_p50": 0.25}
    figures = {"results": {"a": {"cache_aware": one, "round_robin": {"hit_rate": 0.7, "ttft_p50": 0.45},
                                 "bound": one}, "b": {"cache_aware": one}}}
    _png(plots.routing(figures, tmp_path / "routing.png"))
