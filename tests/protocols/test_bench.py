"""Smoke test of the protocol micro-benchmark (gateway_dev/bench/protocols.py): it runs and prints every
section. Figures are not asserted: speed is read from the benchmark's same-run ratios."""

from __future__ import annotations

import pytest

from gateway_dev.bench.protocols import main


def test_benchmark_runs_and_prints_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--deltas", "20", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    for protocol in ("openai_chat", "openai_responses", "anthropic_messages", "gemini"):
        assert out.count(protocol) >= 2
    assert "usage-chunk filter" in out and "request translation" in out and "ratio" in out
