"""deepseek dialect: prompt_tokens = prompt_cache_hit_tokens + prompt_cache_miss_tokens."""

from __future__ import annotations

import pytest

from gateway.accounting.normalize import dialect_for, normalize, sniff_dialect
from gateway.config import Settings
from gateway.providers import ProviderTable

# The shape DeepSeek's API reference documents for chat completion usage.
REASONER = {"prompt_tokens": 1500, "completion_tokens": 900, "total_tokens": 2400,
            "prompt_cache_hit_tokens": 1280, "prompt_cache_miss_tokens": 220,
            "completion_tokens_details": {"reasoning_tokens": 700}}
# Newer bodies also carry OpenAI's cached_tokens with the same number: it must not be added twice.
BOTH = {**REASONER, "prompt_tokens_details": {"cached_tokens": 1280}}


def test_hits_inside_prompt_tokens() -> None:
    u = normalize("deepseek", REASONER)
    assert (u.input_tokens, u.cached_input_tokens, u.uncached_input_tokens) == (1500, 1280, 220)
    assert u.cache_creation_input_tokens == 0  # misses build the cache at no premium
    assert (u.output_tokens, u.reasoning_tokens, u.total_tokens) == (900, 700, 2400)


def test_openai_field_alongside_is_not_double_counted() -> None:
    assert normalize("deepseek", BOTH) == normalize("deepseek", REASONER)


def test_prompt_tokens_missing_uses_hit_plus_miss() -> None:
    u = normalize("deepseek", {"prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36, "completion_tokens": 5})
    assert (u.input_tokens, u.cached_input_tokens, u.total_tokens) == (100, 64, 105)


def test_only_openai_fields() -> None:
    u = normalize("deepseek", {"prompt_tokens": 10, "completion_tokens": 2,
                               "prompt_tokens_details": {"cached_tokens": 4}})
    assert (u.input_tokens, u.cached_input_tokens) == (10, 4)


def test_dialect_for_providers() -> None:
    settings = Settings.load(env={}, upstreams=[
        {"name": "kimi", "base_url": "http://k/v1", "models": ["kimi-*"], "usage_dialect": "deepseek"},
        {"name": "qwen", "base_url": "http://q/v1", "models": ["qwen-*"]},
    ])
    table = ProviderTable(settings)

    def declared(name: str) -> str | None:
        provider = table.get(name)
        assert provider is not None
        return provider.spec.usage.name if provider.spec.usage is not None else None

    assert dialect_for("openai_chat", declared("deepseek")) == "deepseek"
    assert dialect_for("openai_chat", declared("kimi")) == "deepseek"
    assert dialect_for("openai_chat", declared("qwen")) == "openai_chat"
    assert dialect_for("openai_chat", declared("vllm")) == "openai_chat"
    assert dialect_for("openai_responses", declared("openai")) == "openai_responses"
    assert dialect_for("anthropic_messages", declared("anthropic")) == "anthropic"
    assert dialect_for("gemini", declared("gemini")) == "gemini"
    assert dialect_for(None) == "openai_chat"


def test_sniffed_and_unknown_dialect() -> None:
    assert sniff_dialect(REASONER) == "deepseek"
    with pytest.raises(ValueError):
        normalize("cohere", REASONER)
