"""openai_chat dialect (also vLLM): prompt_tokens INCLUDES cached tokens."""

from __future__ import annotations

from gateway.accounting.normalize import normalize, sniff_dialect

# The prompt-caching guide's example: 2006 prompt, 1920 cached.
GUIDE = {
    "prompt_tokens": 2006,
    "completion_tokens": 300,
    "total_tokens": 2306,
    "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                  "rejected_prediction_tokens": 0},
}
# A recorded 2024 stream's final chunk usage: no prompt details at all.
RECORDED_STREAM = {"prompt_tokens": 79, "completion_tokens": 11, "total_tokens": 90,
                   "completion_tokens_details": {"reasoning_tokens": 0}}
# GPT-5.6 regime: writes reported in cache_write_tokens, reasoning inside completion_tokens.
GPT56 = {"prompt_tokens": 5000, "completion_tokens": 800, "total_tokens": 5800,
         "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1500},
         "completion_tokens_details": {"reasoning_tokens": 500}}


def test_cached_tokens_are_inside_prompt_tokens() -> None:
    u = normalize("openai_chat", GUIDE)
    assert u.input_tokens == 2006  # not 2006 + 1920
    assert u.cached_input_tokens == u.cache_read_input_tokens == 1920
    assert u.cache_creation_input_tokens == 0
    assert u.uncached_input_tokens == 86
    assert (u.output_tokens, u.total_tokens) == (300, 2306)


def test_stream_usage_without_details() -> None:
    u = normalize("openai_chat", RECORDED_STREAM)
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.total_tokens) == (79, 0, 11, 90)


def test_cache_writes_and_reasoning() -> None:
    u = normalize("openai_chat", GPT56)
    assert (u.input_tokens, u.cached_input_tokens, u.cache_creation_input_tokens) == (5000, 3000, 1500)
    assert u.uncached_input_tokens == 500
    assert (u.output_tokens, u.reasoning_tokens) == (800, 500)  # reasoning is part of output, not added


def test_null_and_missing_fields_count_as_zero() -> None:
    u = normalize("openai_chat", {"prompt_tokens": 10, "completion_tokens": None, "prompt_tokens_details": None,
                                  "completion_tokens_details": "junk"})
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.total_tokens) == (10, 0, 0, 10)
    assert normalize("openai_chat", {}).input_tokens == 0
    assert normalize("openai_chat", None).total_tokens == 0


def test_embeddings_usage() -> None:
    u = normalize("openai_chat", {"prompt_tokens": 8, "total_tokens": 8})
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (8, 0, 8)


def test_inconsistent_counts_are_clamped() -> None:
    u = normalize("openai_chat", {"prompt_tokens": 100, "completion_tokens": 1,
                                  "prompt_tokens_details": {"cached_tokens": 150}})
    assert u.cached_input_tokens == 100 and u.uncached_input_tokens == 0


def test_sniffed() -> None:
    assert sniff_dialect(GUIDE) == "openai_chat"
