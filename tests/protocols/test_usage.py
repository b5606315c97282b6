"""Usage across dialects: detection, neutral counts (the contract's normalisation), rendering."""

from __future__ import annotations

import pytest

from gateway.protocols.usage import UsageCounts, dialect_of, normalize_usage, render_usage, usage_for

CHAT = {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 10},
        "completion_tokens_details": {"reasoning_tokens": 64}}
DEEPSEEK = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105, "prompt_cache_hit_tokens": 64,
            "prompt_cache_miss_tokens": 36}
RESPONSES = {"input_tokens": 2006, "input_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 0},
             "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2306}
ANTHROPIC = {"input_tokens": 25, "cache_creation_input_tokens": 248, "cache_read_input_tokens": 1800,
             "output_tokens": 15, "output_tokens_details": {"thinking_tokens": 4}}
GEMINI = {"promptTokenCount": 2100, "cachedContentTokenCount": 2048, "candidatesTokenCount": 6,
          "thoughtsTokenCount": 24, "toolUsePromptTokenCount": 10, "totalTokenCount": 2140}


@pytest.mark.parametrize(("usage", "dialect"), [
    (CHAT, "openai_chat"), (DEEPSEEK, "openai_chat"), (RESPONSES, "openai_responses"),
    (ANTHROPIC, "anthropic_messages"), (GEMINI, "gemini"), ({}, None), ({"weird": 1}, None),
])
def test_dialect_of(usage: dict, dialect: str | None) -> None:
    assert dialect_of(usage) == dialect


@pytest.mark.parametrize(("usage", "counts"), [
    # (input incl. cache, cache read, cache write, output incl. reasoning, reasoning)
    (CHAT, (2006, 1920, 10, 300, 64)),
    (DEEPSEEK, (100, 64, 0, 5, 0)),
    (RESPONSES, (2006, 1920, 0, 300, 0)),
    (ANTHROPIC, (25 + 248 + 1800, 1800, 248, 15, 4)),  # input_tokens counts every prompt token
    (GEMINI, (2110, 2048, 0, 30, 24)),  # thoughts are output; cached is a subset of prompt
    ({}, (0, 0, 0, 0, 0)),
])
def test_normalize(usage: dict, counts: tuple[int, ...]) -> None:
    c = normalize_usage(usage)
    assert (c.input_tokens, c.cached_input_tokens, c.cache_creation_input_tokens, c.output_tokens,
            c.reasoning_tokens) == counts


def test_the_same_counts_as_the_usage_records() -> None:
    from gateway.accounting.normalize import normalize

    assert normalize_usage(ANTHROPIC) == normalize("anthropic", ANTHROPIC)
    assert normalize_usage(DEEPSEEK) == normalize("deepseek", DEEPSEEK)


def test_anthropic_1h_writes_survive_a_dialect_change() -> None:
    usage = {**ANTHROPIC, "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 48}}
    back = usage_for("anthropic_messages", usage_for("openai_responses", usage))
    assert back["cache_creation_input_tokens"] == 248 and back["input_tokens"] == 25


def test_same_dialect_is_passed_through_untouched() -> None:
    assert usage_for("anthropic_messages", ANTHROPIC) is ANTHROPIC
    assert usage_for("openai_chat", DEEPSEEK) is DEEPSEEK


@pytest.mark.parametrize("source", [CHAT, RESPONSES, ANTHROPIC, GEMINI])
@pytest.mark.parametrize("target", ["openai_chat", "openai_responses", "anthropic_messages", "gemini"])
def test_cross_dialect_keeps_the_neutral_counts(source: dict, target: str) -> None:
    rendered = usage_for(target, source)
    assert dialect_of(rendered) == target
    a, b = normalize_usage(source), normalize_usage(rendered)
    assert b.total_tokens == a.input_tokens + a.output_tokens
    assert (b.input_tokens, b.cached_input_tokens, b.output_tokens) == (a.input_tokens, a.cached_input_tokens,
                                                                          a.output_tokens)
    if target != "gemini":  # Gemini has no cache-write field
        assert b.cache_creation_input_tokens == a.cache_creation_input_tokens


def test_anthropic_to_openai_chat() -> None:
    out = usage_for("openai_chat", ANTHROPIC)
    assert out["prompt_tokens"] == 2073 and out["prompt_tokens_details"]["cached_tokens"] == 1800
    assert out["total_tokens"] == 2088


def test_unknown_dialect() -> None:
    with pytest.raises(ValueError):
        render_usage("cohere", UsageCounts())


def test_anthropic_rendering_splits_the_cache_write_by_retention() -> None:
    out = render_usage("anthropic_messages", UsageCounts(input_tokens=1000, cached_input_tokens=600,
                                                         cache_creation_input_tokens=300, cache_write_long_tokens=100,
                                                         output_tokens=5))
    assert out["input_tokens"] == 100 and out["cache_creation"] == {"ephemeral_5m_input_tokens": 200,
                                                                    "ephemeral_1h_input_tokens": 100}
