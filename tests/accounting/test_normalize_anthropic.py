"""anthropic dialect: input_tokens EXCLUDES cache reads and writes; they are added."""

from __future__ import annotations

from gateway.accounting.normalize import normalize, sniff_dialect

# message_start usage of the streaming example, then a cached call.
STREAM_START = {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 1, "service_tier": "standard"}
READ_AND_WRITE = {"input_tokens": 50, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 248,
                  "cache_creation": {"ephemeral_5m_input_tokens": 148, "ephemeral_1h_input_tokens": 100},
                  "output_tokens": 503, "output_tokens_details": {"thinking_tokens": 200}}
# The docs' own 1h example is inconsistent (456 + 100 != 248): the total wins, the split is clamped.
DOC_1H = {"input_tokens": 2048, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 248,
          "output_tokens": 503, "cache_creation": {"ephemeral_5m_input_tokens": 456, "ephemeral_1h_input_tokens": 100}}


def test_reads_and_writes_are_added_to_input() -> None:
    u = normalize("anthropic", READ_AND_WRITE)
    assert u.input_tokens == 50 + 1800 + 248
    assert u.cached_input_tokens == u.cache_read_input_tokens == 1800
    assert u.cache_creation_input_tokens == 248
    assert (u.cache_write_long_tokens, u.cache_write_short_tokens) == (100, 148)
    assert u.uncached_input_tokens == 50
    assert (u.output_tokens, u.reasoning_tokens) == (503, 200)
    assert u.total_tokens == 2098 + 503  # Anthropic sends no total: derived


def test_stream_start_no_cache() -> None:
    u = normalize("anthropic", STREAM_START)
    assert (u.input_tokens, u.cached_input_tokens, u.cache_creation_input_tokens, u.output_tokens) == (25, 0, 0, 1)


def test_inconsistent_doc_example() -> None:
    u = normalize("anthropic", DOC_1H)
    assert u.input_tokens == 2048 + 1800 + 248
    assert u.cache_creation_input_tokens == 248 and u.cache_write_long_tokens == 100


def test_creation_without_split_is_all_5m() -> None:
    u = normalize("anthropic", {"input_tokens": 10, "cache_creation_input_tokens": 2000, "output_tokens": 3})
    assert (u.cache_write_long_tokens, u.cache_write_short_tokens, u.input_tokens) == (0, 2000, 2010)


def test_nulls() -> None:
    u = normalize("anthropic", {"input_tokens": 7, "cache_read_input_tokens": None, "cache_creation": None,
                                "output_tokens": 2})
    assert (u.input_tokens, u.cached_input_tokens, u.total_tokens) == (7, 0, 9)


def test_sniffed() -> None:
    assert sniff_dialect(READ_AND_WRITE) == "anthropic"
    assert sniff_dialect({"input_tokens": 3, "output_tokens": 1}) == "anthropic"
