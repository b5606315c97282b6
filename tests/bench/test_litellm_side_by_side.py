"""The LiteLLM side-by-side benchmark's parts: its peer's config, the accounting of the figures and
targets, the semantic comparison's single-threshold oracle. The full run (`bench litellm`) needs
LiteLLM's proxy in `.bench-venv/` and minutes of a quiet machine: it is a benchmark, not a test."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from gateway_dev.bench.common import LoadResult
from gateway_dev.bench.litellm_proxy import MASTER_KEY, tree_cpu_seconds, tree_rss_mib, write_config
from gateway_dev.bench.litellm_report import table
from gateway_dev.bench.litellm_side_by_side import Side, summarize
from gateway_dev.bench.semantic_vs_litellm import best_single_threshold, markdown


def test_litellm_config_follows_its_docs(tmp_path: Path) -> None:
    cfg = yaml.safe_load(write_config(tmp_path, "gpt-4o-mini", "http://127.0.0.1:9/v1", "127.0.0.1", 6380)
                         .read_text())
    assert cfg["model_list"] == [{"model_name": "gpt-4o-mini", "litellm_params": {
        "model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:9/v1", "api_key": "sk-bench"}}]
    assert cfg["litellm_settings"]["cache"] is True
    assert cfg["litellm_settings"]["cache_params"]["type"] == "redis"
    assert cfg["litellm_settings"]["cache_params"]["port"] == 6380
    assert cfg["general_settings"]["master_key"] == MASTER_KEY
    assert cfg["general_settings"]["background_health_checks"] is False


def _result(ms: float, n: int, seconds: float) -> LoadResult:
    return LoadResult(latencies=[ms / 1000] * n, elapsed=seconds)


def test_summary_ratios_and_targets() -> None:
    direct = Side("direct", "", "", misses=[_result(50, 10, 1), _result(52, 10, 1)])
    gw = Side("gateway", "", "", misses=[_result(55, 10, 1), _result(57, 10, 1)],
              hits=[_result(2, 1000, 1), _result(2, 1000, 1)], cpu_per_hit_ms=[0.5, 0.5], cpu_per_miss_ms=[0.4, 0.6],
              ready_s=1.5, rss_ready_mib=120, rss_end_mib=140)
    ll = Side("litellm", "", "", misses=[_result(80, 10, 1), _result(82, 10, 1)],
              hits=[_result(20, 100, 1), _result(20, 100, 1)], cpu_per_hit_ms=[15, 15], cpu_per_miss_ms=[20, 22],
              ready_s=9.0, rss_ready_mib=360, rss_end_mib=400)
    s = summarize(direct, gw, ll)
    assert round(s["gateway"]["added_p50"] * 1000, 6) == 5.0
    assert round(s["litellm"]["added_p50"] * 1000, 6) == 30.0
    assert round(s["ratios"]["added_p50"], 4) == round(5 / 30, 4)
    assert s["ratios"]["hit_throughput"] == 10.0
    assert s["targets"] == {"hit_throughput_3x": True, "added_latency_third": True}
    args = argparse.Namespace(miss_concurrency=8, concurrency=32)
    text = "\n".join(table(s, args))
    assert "| exact hits/s (32 clients) | | 1000 | 100 | 10.00× | ≥ 3×: met |" in text
    assert "| proxy CPU ms per hit (all its processes) | | 0.500 | 15.00 | 0.033 | ≤ 0.22: **not met** |" in text
    assert "| proxy CPU ms per miss (all its processes) | | 0.500 | 21.00 | 0.024 | ≤ 0.50: met |" in text
    ready = "| ready after start, s (gateway /readyz, LiteLLM /health/readiness) | | 1.50 | 9.00 | 0.167 | ≤ 3 s: met |"
    assert ready in text
    assert "| RSS MiB at the end of the run | | 140 | 400 | 0.350 | ≤ 150: met |" in text
    # a slower gateway misses the targets, and the table says so
    gw.hits = [_result(2, 200, 1)] * 2
    assert not summarize(direct, gw, ll)["targets"]["hit_throughput_3x"]


def test_best_single_threshold_allows_exactly_the_false_hits_given() -> None:
    sims = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.6])
    reuse = np.array([True, False, True, False, True, False])
    cut = best_single_threshold(sims, reuse, max_false_hit=1 / 3)  # one of the three negatives may hit
    hits = sims >= cut
    assert int((hits & ~reuse).sum()) == 1 and bool(hits[0]) and bool(hits[2]) and not hits[3]
    assert best_single_threshold(sims, reuse, 0.0) > 0.9


def test_semantic_markdown_lists_every_method() -> None:
    row = {"precision": 1.0, "recall": 0.5, "false_hit_rate": 0.0, "hard_false_hit_rate": float("nan"),
           "tp": 1, "fp": 0, "fn": 1, "tn": 2}
    text = "\n".join(markdown([{"pairs": "p.jsonl", "n": 4, "embedder": "e",
                                "rows": [{"method": "gateway", **row}, {"method": "LiteLLM", **row}]}]))
    assert "| gateway | 1.000 | 0.500 | 0.000 | – | 1 | 0 | 1 | 2 |" in text and "| LiteLLM |" in text


def test_tree_cpu_counts_this_process() -> None:
    sum(i * i for i in range(200_000))
    assert tree_cpu_seconds(os.getpid()) > 0


def test_tree_rss_counts_this_process_and_its_children() -> None:
    own = tree_rss_mib(os.getpid())
    assert own > 10  # this interpreter with pytest loaded
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while tree_rss_mib(os.getpid()) < own + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tree_rss_mib(os.getpid()) >= own + 3  # the child's interpreter counts too
    finally:
        child.kill()
        child.wait()
    assert tree_rss_mib(None) != tree_rss_mib(None)  # NaN without a pid
