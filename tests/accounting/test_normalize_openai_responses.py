"""openai_responses dialect: input_tokens INCLUDES cached tokens; writes split by TTL."""

from __future__ import annotations

from gateway.accounting.normalize import normalize, sniff_dialect

# ResponseUsage as the 3.57 SDK types it.
CLASSIC = {"input_tokens": 2006, "input_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 0},
           "output_tokens": 120, "output_tokens_details": {"reasoning_tokens": 64}, "total_tokens": 2126}
WRITES = {"input_tokens": 9000,
          "input_tokens_details": {"cached_tokens": 4000, "cache_write_tokens": 3000,
                                   "cache_write_tokens_details": {"ttl_30m_tokens": 1000, "ttl_12h_tokens": 2000}},
          "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 9050}


def test_cached_inside_input() -> None:
    u = normalize("openai_responses", CLASSIC)
    assert (u.input_tokens, u.cached_input_tokens, u.uncached_input_tokens) == (2006, 1920, 86)
    assert (u.output_tokens, u.reasoning_tokens, u.total_tokens) == (120, 64, 2126)


def test_write_ttl_split() -> None:
    u = normalize("openai_responses", WRITES)
    assert (u.cache_creation_input_tokens, u.cache_write_long_tokens, u.cache_write_short_tokens) == (3000, 2000, 1000)
    assert u.uncached_input_tokens == 2000


def test_missing_details() -> None:
    u = normalize("openai_responses", {"input_tokens": 5, "output_tokens": 2, "input_tokens_details": None})
    assert (u.input_tokens, u.cached_input_tokens, u.total_tokens) == (5, 0, 7)


def test_sniffed() -> None:
    assert sniff_dialect(CLASSIC) == "openai_responses"
    assert sniff_dialect({"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}) == "openai_responses"
