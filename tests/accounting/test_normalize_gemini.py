"""gemini dialect: promptTokenCount INCLUDES cachedContentTokenCount; thoughts are output."""

from __future__ import annotations

from gateway.accounting.normalize import normalize, sniff_dialect

# usageMetadata with an explicit cache hit.
CACHED = {"promptTokenCount": 5210, "cachedContentTokenCount": 5000, "candidatesTokenCount": 40,
          "thoughtsTokenCount": 120, "totalTokenCount": 5370,
          "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5210}],
          "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 5000}]}
TOOL_USE = {"promptTokenCount": 100, "toolUsePromptTokenCount": 30, "candidatesTokenCount": 10, "totalTokenCount": 140}


def test_cached_inside_prompt_and_thoughts_billed_as_output() -> None:
    u = normalize("gemini", CACHED)
    assert u.input_tokens == 5210  # not 5210 + 5000
    assert (u.cached_input_tokens, u.uncached_input_tokens) == (5000, 210)
    assert u.cache_creation_input_tokens == 0
    assert (u.output_tokens, u.reasoning_tokens) == (160, 120)
    assert u.total_tokens == 5370 == u.input_tokens + u.output_tokens


def test_tool_use_prompt_counts_as_input() -> None:
    u = normalize("gemini", TOOL_USE)
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (130, 10, 140)


def test_intermediate_chunk_usage() -> None:
    u = normalize("gemini", {"promptTokenCount": 12, "totalTokenCount": 12})
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens) == (12, 0, 0)


def test_sniffed() -> None:
    assert sniff_dialect(CACHED) == "gemini"
