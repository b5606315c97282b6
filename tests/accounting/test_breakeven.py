"""The break-even rule: W + (N−1)·R + S < N·B, with every input visible."""

from __future__ import annotations

import pytest

from gateway.accounting.breakeven import (
    REUSE_CAP,
    best,
    decide,
    expected_reuses_keepalive,
    expected_reuses_window,
)


def test_anthropic_5m_pays_from_one_reuse() -> None:
    # 1.25 + 1·0.1 = 1.35 < 2·1
    d = decide(1.25, 0.1, 1.0, expected_reuses=1)
    assert d.cache and d.cost_with_cache == pytest.approx(1.35) and d.cost_without_cache == 2.0
    # no reuse: writing costs 25% more than sending it plain
    assert not decide(1.25, 0.1, 1.0, expected_reuses=0).cache


def test_1h_write_needs_more_reuses() -> None:
    assert not decide(2.0, 0.1, 1.0, expected_reuses=1).cache  # 2.1 > 2
    assert decide(2.0, 0.1, 1.0, expected_reuses=2).cache  # 2.2 < 3


def test_storage_counts() -> None:
    # Gemini 2.5 Flash: input $0.30/M, read $0.03/M, storage $1/M/h: 1 h of storage ≈ 3.3 inputs.
    base, read, storage_h = 0.30e-6, 0.03e-6, 1.0e-6
    one_hour = decide(base + read, read, base, expected_reuses=3, storage_cost=storage_h)
    assert not one_hour.cache
    assert decide(base + read, read, base, expected_reuses=5, storage_cost=storage_h).cache
    five_min = decide(base + read, read, base, expected_reuses=1, storage_cost=storage_h / 12)
    assert five_min.cache
    assert one_hour.as_record()["storage_cost"] == pytest.approx(storage_h)


def test_best_picks_the_lowest_cost_per_use() -> None:
    options = {"5m": decide(1.25, 0.1, 1.0, 0.65), "1h": decide(2.0, 0.1, 1.0, 3.0)}
    name, d = best(options)  # type: ignore[misc]
    assert name == "1h" and d.cost_per_use < options["5m"].cost_per_use
    assert best({"5m": decide(1.25, 0.1, 1.0, 0.0)}) is None


def test_expected_reuses_from_interval_and_count() -> None:
    assert expected_reuses_keepalive(0, None, 300, prior=1.0) == 1.0
    assert expected_reuses_keepalive(1, 10.0, 300, prior=1.0) == 1.0  # one sighting: no interval yet
    hot = expected_reuses_keepalive(5000, 2.0, 300, prior=1.0)
    assert hot == REUSE_CAP
    # a prefix seen 3 times, 10 minutes apart: 5m rarely survives the gap, 1h does
    slow_5m = expected_reuses_keepalive(3, 600.0, 300, prior=1.0)
    slow_1h = expected_reuses_keepalive(3, 600.0, 3600, prior=1.0)
    assert slow_5m == pytest.approx(0.6487, abs=1e-3)
    assert slow_1h == 3.0  # capped by the history
    assert expected_reuses_window(10, 60.0, 3600, prior=2.0) == 10.0
    assert expected_reuses_window(100, 60.0, 3600, prior=2.0) == 60.0
