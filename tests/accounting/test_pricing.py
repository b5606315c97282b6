"""Costs against hand-computed figures (list prices per million tokens written out below)."""

from __future__ import annotations

import pytest

from gateway.accounting import pricing
from gateway.accounting.normalize import normalize
from gateway.accounting.pricing import PriceBook, cost, cost_breakdown, cost_without_cache
from gateway.config import Settings

M = 1e-6  # dollars per million tokens → per token


def test_gpt_4o_cached_read_at_half_price(book: PriceBook) -> None:
    # gpt-4o: input $2.50/M, cached $1.25/M, output $10/M; 2006 prompt of which 1920 cached, 300 out.
    u = normalize("openai_chat", {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                                  "prompt_tokens_details": {"cached_tokens": 1920}})
    p = book.lookup("openai", "gpt-4o")
    assert cost(u, p) == pytest.approx(86 * 2.5 * M + 1920 * 1.25 * M + 300 * 10 * M)  # 0.005615
    assert cost(u, p) == pytest.approx(0.005615)
    assert cost_without_cache(u, p) == pytest.approx(0.008015)  # 2006·2.50 + 300·10, per M


def test_claude_sonnet_4_5_reads_and_5m_1h_writes(book: PriceBook) -> None:
    # input $3/M, read $0.30/M, 5m write $3.75/M (1.25×), 1h write $6/M (2×), output $15/M.
    u = normalize("anthropic", {"input_tokens": 50, "cache_read_input_tokens": 1800,
                                "cache_creation_input_tokens": 248,
                                "cache_creation": {"ephemeral_5m_input_tokens": 148, "ephemeral_1h_input_tokens": 100},
                                "output_tokens": 503})
    p = book.lookup("anthropic", "claude-sonnet-4-5")
    assert cost(u, p) == pytest.approx(50 * 3 * M + 1800 * 0.3 * M + 148 * 3.75 * M + 100 * 6 * M + 503 * 15 * M)
    assert cost(u, p) == pytest.approx(0.00939)
    assert cost_without_cache(u, p) == pytest.approx(2098 * 3 * M + 503 * 15 * M)  # 0.013839
    b = cost_breakdown(u, p)
    assert b.read_saving_usd == pytest.approx(1800 * 2.7 * M)
    assert b.write_premium_usd == pytest.approx(148 * 0.75 * M + 100 * 3 * M)
    assert b.cost_without_cache_usd - b.cost_usd == pytest.approx(b.read_saving_usd - b.write_premium_usd)


def test_gemini_2_5_flash_cached_and_storage(book: PriceBook) -> None:
    # Gemini API (gemini/ prefix): input $0.30/M, cached $0.03/M, output $2.50/M; storage $1/M/hour.
    u = normalize("gemini", {"promptTokenCount": 5210, "cachedContentTokenCount": 5000,
                             "candidatesTokenCount": 40, "thoughtsTokenCount": 120, "totalTokenCount": 5370})
    p = book.lookup("gemini", "gemini-2.5-flash")
    assert p.source == "litellm:gemini/gemini-2.5-flash"
    assert cost(u, p) == pytest.approx(210 * 0.3 * M + 5000 * 0.03 * M + 160 * 2.5 * M)  # 0.000613
    assert cost_without_cache(u, p) == pytest.approx(0.001963)
    assert book.storage_cost(5000, 2.0, "gemini-2.5-flash") == pytest.approx(5000 * 2 * 1.0 * M)
    assert book.storage_cost(10_000, 0.5, "gemini-2.5-pro") == pytest.approx(10_000 * 0.5 * 4.5 * M)


def test_deepseek_chat_hits(book: PriceBook) -> None:
    # deepseek-chat: input (miss) $0.28/M, hit $0.028/M, output $0.42/M.
    u = normalize("deepseek", {"prompt_tokens": 1500, "completion_tokens": 900, "total_tokens": 2400,
                               "prompt_cache_hit_tokens": 1280, "prompt_cache_miss_tokens": 220})
    p = book.lookup("deepseek", "deepseek-chat")
    assert p.source == "litellm:deepseek/deepseek-chat"
    assert cost(u, p) == pytest.approx(220 * 0.28 * M + 1280 * 0.028 * M + 900 * 0.42 * M)  # 0.00047544
    assert cost_without_cache(u, p) == pytest.approx(0.000798)
    assert p.write_rate == p.input  # litellm's 0.0 write cost means "no premium", not "free prompt"


def test_gpt_5_6_write_premium_and_12h(book: PriceBook) -> None:
    # gpt-5.6: input $4/M, cached $0.40/M, write $5/M (1.25×), 12h write $10/M, output $20/M.
    u = normalize("openai_responses", {
        "input_tokens": 9000, "output_tokens": 50, "total_tokens": 9050, "output_tokens_details": {},
        "input_tokens_details": {"cached_tokens": 4000, "cache_write_tokens": 3000,
                                 "cache_write_tokens_details": {"ttl_30m_tokens": 1000, "ttl_12h_tokens": 2000}}})
    p = book.lookup("openai", "gpt-5.6")
    assert cost(u, p) == pytest.approx(2000 * 4 * M + 4000 * 0.4 * M + 1000 * 5 * M + 2000 * 10 * M + 50 * 20 * M)


def test_openai_writes_before_5_6_cost_the_input_price(book: PriceBook) -> None:
    u = normalize("openai_chat", {"prompt_tokens": 2000, "completion_tokens": 0,
                                  "prompt_tokens_details": {"cache_write_tokens": 2000}})
    assert cost(u, book.lookup("openai", "gpt-4o")) == pytest.approx(2000 * 2.5 * M)


def test_long_context_tier(book: PriceBook) -> None:
    # gemini-2.5-pro above 200k prompt tokens: input $2.50/M, cached $0.25/M, output $15/M.
    u = normalize("gemini", {"promptTokenCount": 250_000, "cachedContentTokenCount": 200_000,
                             "candidatesTokenCount": 1000})
    p = book.lookup("gemini", "gemini-2.5-pro")
    assert cost(u, p) == pytest.approx(50_000 * 2.5 * M + 200_000 * 0.25 * M + 1000 * 15 * M)
    small = normalize("gemini", {"promptTokenCount": 1000, "candidatesTokenCount": 10})
    assert cost(small, p) == pytest.approx(1000 * 1.25 * M + 10 * 10 * M)


@pytest.mark.parametrize(("provider", "model", "key"), [
    ("openai", "gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
    ("anthropic", "claude-haiku-4-5-20991231", "claude-haiku-4-5"),
    ("gemini", "models/gemini-2.5-flash", "gemini/gemini-2.5-flash"),
    ("gemini", "gemini-2.5-flash-001", "gemini/gemini-2.5-flash"),
    ("deepseek", "deepseek-reasoner", "deepseek/deepseek-reasoner"),
    ("openai", "openai/gpt-4o", "gpt-4o"),
])
def test_name_resolution(book: PriceBook, provider: str, model: str, key: str) -> None:
    assert book.lookup(provider, model).source == f"litellm:{key}"


def test_vllm_and_unknown_models_cost_zero_unless_configured(cost_map) -> None:  # type: ignore[no-untyped-def]
    settings = Settings.load(env={}, prices={"vllm/*": {"input": 1e-7, "output": 2e-7}},
                             upstreams=[{"name": "kimi", "base_url": "http://k/v1", "models": ["kimi-*"],
                                         "prices": {"kimi-k9": {"input": 6e-7, "output": 2.5e-6,
                                                                "cache_read": 1.5e-7}}}])
    book = PriceBook(settings, cost_map)
    u = normalize("openai_chat", {"prompt_tokens": 1000, "completion_tokens": 100,
                                  "prompt_tokens_details": {"cached_tokens": 600}})
    # A self-hosted model whose name the map knows elsewhere is still not priced from the map.
    assert PriceBook(None, cost_map).lookup("vllm", "gpt-4o").source == "self-hosted"
    assert cost(u, PriceBook(None, cost_map).lookup("vllm", "Qwen/Qwen3-8B")) == 0
    assert cost(u, book.lookup("vllm", "Qwen/Qwen3-8B")) == pytest.approx(1000 * 0.1 * M + 100 * 0.2 * M)
    assert book.lookup("vllm", "Qwen/Qwen3-8B").source == "config"
    p = book.lookup("kimi", "kimi-k9")
    assert cost(u, p) == pytest.approx(400 * 0.6 * M + 600 * 0.15 * M + 100 * 2.5 * M)
    unknown = book.lookup("kimi", "kimi-unheard-of")
    assert unknown.source == "unknown" and cost(u, unknown) == 0


def test_override_replaces_single_fields(cost_map) -> None:  # type: ignore[no-untyped-def]
    settings = Settings.load(env={}, prices={"claude-sonnet-4-5": {"cache_write_1h": 9e-6}})
    p = PriceBook(settings, cost_map).lookup("anthropic", "claude-sonnet-4-5")
    assert (p.input, p.cache_write, p.cache_write_long) == (3e-6, 3.75e-6, 9e-6)
    assert p.source == "litellm:claude-sonnet-4-5+config"


def test_module_storage_cost_uses_installed_book(book: PriceBook) -> None:
    pricing.install(book)
    assert pricing.storage_cost(1_000_000, 1.0, "gemini-2.5-flash") == pytest.approx(1.0)
