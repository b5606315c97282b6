"""The per-template break-even verdict from observed counts: W + (N−1)·R + S < N."""

from __future__ import annotations

import pytest

from gateway.accounting.pricing import PriceBook
from gateway.accounting.verdict import observed_uses, verdict


def agg(**fields: float) -> dict[str, float]:
    return fields


def test_observed_uses() -> None:
    assert observed_uses(9, 1, 10, writes_reported=True) == (10.0, 1)
    assert observed_uses(3, 0, 10, writes_reported=False) == (10 / 7, 7)  # every non-read request wrote
    assert observed_uses(4, 0, 4, writes_reported=True) == (5.0, 1)  # written before the window
    assert observed_uses(0, 0, 10, writes_reported=True) == (0.0, 0)


def test_anthropic_prefix_read_nine_times_pays(book: PriceBook) -> None:
    v = verdict(agg(provider_reads=9, provider_writes=1, upstream_requests=10, cache_creation_input_tokens=2000),
                book.lookup("anthropic", "claude-sonnet-4-5"), "anthropic")
    assert v.applies and v.pays
    assert (v.uses, v.write, v.read) == pytest.approx((10, 1.25, 0.1))
    assert v.left == pytest.approx(1.25 + 9 * 0.1) and v.right == pytest.approx(10)


def test_anthropic_prefix_never_read_costs_more(book: PriceBook) -> None:
    v = verdict(agg(provider_reads=0, provider_writes=5, upstream_requests=5, cache_creation_input_tokens=9000),
                book.lookup("anthropic", "claude-sonnet-4-5"), "anthropic")
    assert v.applies and not v.pays and v.uses == 1 and v.left == pytest.approx(1.25)


def test_anthropic_1h_writes_use_the_2x_price(book: PriceBook) -> None:
    v = verdict(agg(provider_reads=1, provider_writes=1, upstream_requests=2, cache_creation_input_tokens=1000,
                    cache_write_long_tokens=1000), book.lookup("anthropic", "claude-sonnet-4-5"), "anthropic")
    assert v.write == pytest.approx(2.0) and v.uses == 2 and not v.pays  # 2 + 0.1 > 2


def test_openai_free_writes(book: PriceBook) -> None:
    v = verdict(agg(provider_reads=3, upstream_requests=10), book.lookup("openai", "gpt-4o"), "openai")
    assert v.applies and v.pays and v.write == pytest.approx(1.0) and v.read == pytest.approx(0.5)


def test_gemini_storage_counts(book: PriceBook) -> None:
    prices = book.lookup("gemini", "gemini-2.5-flash")
    cheap = verdict(agg(provider_reads=4, upstream_requests=5, cached_input_tokens=4 * 10_000), prices, "gemini")
    assert cheap.pays and cheap.storage == 0
    # $1 of storage for one written 10k-token prefix = 1e-4 per token = 333 input prices: never pays.
    dear = verdict(agg(provider_reads=4, upstream_requests=5, cached_input_tokens=4 * 10_000, storage_cost_usd=1.0),
                   prices, "gemini")
    assert not dear.pays and dear.storage == pytest.approx(1.0 / 10_000 / 3e-7)


def test_not_applicable() -> None:
    assert not verdict(agg(upstream_requests=10), None).applies
