"""Minimum lengths, model capabilities and prices (litellm's map through the usage layer's book)."""

from __future__ import annotations

import pytest

from gateway.accounting.pricing import PriceBook
from gateway.provider_cache.tables import (
    fallback_prices,
    gemini_implicit,
    gpt_breakpoints,
    min_tokens,
    openai_retentions,
    prices_for,
)
from gateway.provider_cache.tokens import TokenCounter, estimate


@pytest.mark.parametrize(("vendor", "model", "minimum"), [
    ("anthropic", "claude-sonnet-4-5-20250929", 1024), ("anthropic", "claude-opus-4-6", 4096),
    ("anthropic", "claude-haiku-4-5", 4096), ("anthropic", "claude-opus-5", 512), ("anthropic", "claude-new", 1024),
    ("gemini", "gemini-2.5-flash", 2048), ("gemini", "models/gemini-3-flash-preview", 4096),
    ("openai", "gpt-4o", 1024), ("deepseek", "deepseek-chat", 64),
])
def test_minimums(vendor: str, model: str, minimum: int) -> None:
    assert min_tokens(vendor, model) == minimum


def test_capabilities() -> None:
    assert gpt_breakpoints("gpt-5.6") and gpt_breakpoints("gpt-6") and not gpt_breakpoints("gpt-5.5")
    assert gemini_implicit("gemini-2.5-pro") and not gemini_implicit("gemini-2.0-flash")
    assert openai_retentions("gpt-4.1-2025-04-14") == ("24h", "in_memory") and openai_retentions("gpt-4o") == (
        "in_memory",)


def test_prices_from_litellm_and_the_ratio_fallback() -> None:
    book = PriceBook()
    anthropic = prices_for("anthropic", "anthropic", "claude-sonnet-4-5", book)
    assert anthropic.source.startswith("litellm")
    assert anthropic.read / anthropic.input == pytest.approx(0.1)
    assert anthropic.write / anthropic.input == pytest.approx(1.25)
    assert anthropic.write_long / anthropic.input == pytest.approx(2.0)
    flash = prices_for("gemini", "gemini", "gemini-2.5-flash", book)
    assert flash.storage_hour == pytest.approx(1e-6) and flash.read < flash.input
    unknown = prices_for("openai", "openai", "no-such-model", book)
    assert unknown == fallback_prices("openai", "no-such-model") and unknown.source == "ratios"


def test_token_counts() -> None:
    counter = TokenCounter()
    assert counter.count("hello world") == estimate("hello world") == 3  # before load(): the estimate
    assert counter.load() and counter.exact
    assert counter.count("hello world") == 2
    assert estimate("你好世界") == 4
