"""The latency model's arithmetic, presets and spec parsing."""

from __future__ import annotations

import pytest

from gateway_dev.emulators.latency import PRESETS, LatencyModel, parse_latency


def test_ttft_and_decode() -> None:
    m = LatencyModel(base_s=0.1, prefill_per_token_s=0.001, cached_per_token_s=0.0001, inter_token_s=0.01)
    assert m.ttft(100, 1000) == pytest.approx(0.1 + 0.1 + 0.1)
    assert m.decode(11) == pytest.approx(0.1) and m.decode(0) == 0
    assert LatencyModel().zero().is_zero and not LatencyModel().is_zero


def test_presets_and_specs() -> None:
    assert parse_latency("zero").is_zero
    real = parse_latency("realistic")
    assert real == PRESETS["realistic"] and real is not PRESETS["realistic"]
    m = parse_latency("realistic,itl=0,base=0.5")
    assert (m.inter_token_s, m.base_s, m.prefill_per_token_s) == (0, 0.5, PRESETS["realistic"].prefill_per_token_s)
    base = LatencyModel()
    assert base.with_overrides(None) is base
    over = base.with_overrides("prefill=0.01")
    assert over.prefill_per_token_s == 0.01 and base.prefill_per_token_s != 0.01
    with pytest.raises(ValueError):
        parse_latency("warp=9")
    with pytest.raises(ValueError):
        parse_latency("glacial")
