"""bedrock dialect (Converse TokenUsage): inputTokens EXCLUDES cache reads and writes, as Anthropic's does."""

from __future__ import annotations

from gateway.accounting.normalize import dialect_for, normalize, sniff_dialect

WRITE = {"inputTokens": 12, "outputTokens": 40, "totalTokens": 2100, "cacheReadInputTokens": 0,
         "cacheWriteInputTokens": 2048, "cacheDetails": [{"ttl": "5m", "inputTokens": 2048}]}
READ = {"inputTokens": 12, "outputTokens": 40, "totalTokens": 2100, "cacheReadInputTokens": 2048,
        "cacheWriteInputTokens": 0}


def test_reads_and_writes_are_added_to_input() -> None:
    w, r = normalize("bedrock", WRITE), normalize("bedrock", READ)
    assert (w.input_tokens, w.cached_input_tokens, w.cache_creation_input_tokens) == (2060, 0, 2048)
    assert (r.input_tokens, r.cached_input_tokens, r.cache_creation_input_tokens) == (2060, 2048, 0)
    assert w.uncached_input_tokens == r.uncached_input_tokens == 12
    assert w.output_tokens == 40 and w.total_tokens == 2100


def test_long_ttl_split_and_details_without_total() -> None:
    u = normalize("bedrock", {"inputTokens": 1, "outputTokens": 2, "cacheDetails": [
        {"ttl": "1h", "inputTokens": 1500}, {"ttl": "5m", "inputTokens": 600}]})
    assert u.cache_creation_input_tokens == 2100 and u.cache_write_long_tokens == 1500
    assert u.cache_write_short_tokens == 600


def test_models_without_cache_fields_and_odd_values() -> None:
    u = normalize("bedrock", {"inputTokens": 30, "outputTokens": "x", "totalTokens": 30})
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens) == (30, 0, 0)


def test_sniffed_and_named() -> None:
    assert sniff_dialect(READ) == "bedrock"
    assert dialect_for("bedrock_converse") == "bedrock"
