"""Usage objects across vendor dialects, for rendering.

An `Answer` keeps its vendor's usage object untouched (`usage_raw`). When that answer is rendered
in the same dialect, the object goes out as it came in. When it is rendered in another dialect
(a cross-protocol call, e.g. an OpenAI client answered by Claude) the usage is rebuilt in the
client's own fields from neutral counts, so that the client's arithmetic stays right: OpenAI's
`prompt_tokens` and Gemini's `promptTokenCount` include cached tokens, Anthropic's `input_tokens`
does not (the double-billing bug class listed in the gateway pitfalls).

The neutral counts come from `gateway.accounting.normalize`, the one place that reads vendor usage
(the usage records use it too), so a rendered usage and the usage record never disagree.
"""

from __future__ import annotations

from typing import Any

from gateway.accounting import normalize as nu

OPENAI_CHAT = "openai_chat"
OPENAI_RESPONSES = "openai_responses"
ANTHROPIC = "anthropic_messages"
GEMINI = "gemini"
BEDROCK = "bedrock_converse"

UsageCounts = nu.NormalizedUsage
# usage dialect (gateway.accounting.normalize) → the adapter whose wire format carries it
_ADAPTER_OF = {nu.OPENAI_CHAT: OPENAI_CHAT, nu.DEEPSEEK: OPENAI_CHAT, nu.OPENAI_RESPONSES: OPENAI_RESPONSES,
               nu.ANTHROPIC: ANTHROPIC, nu.GEMINI: GEMINI,
               nu.BEDROCK: BEDROCK}


def dialect_of(usage: dict[str, Any] | None) -> str | None:
    """The adapter whose dialect a usage object is written in (None for an empty or unknown one);
    DeepSeek's and vLLM's usage are OpenAI Chat's."""
    sniffed = nu.sniff_dialect(usage)
    return _ADAPTER_OF.get(sniffed) if sniffed else None


def normalize_usage(usage: dict[str, Any] | None) -> nu.NormalizedUsage:
    """Neutral counts of a usage object in any dialect (zeros for an empty or unknown one)."""
    sniffed = nu.sniff_dialect(usage)
    return nu.normalize(sniffed, usage) if sniffed else nu.ZERO


def render_usage(dialect: str, c: nu.NormalizedUsage) -> dict[str, Any]:
    """`c` written in the `dialect` adapter's own usage fields."""
    total = c.input_tokens + c.output_tokens
    if dialect == OPENAI_CHAT:
        details: dict[str, int] = {"cached_tokens": c.cached_input_tokens, "audio_tokens": 0}
        if c.cache_creation_input_tokens:
            details["cache_write_tokens"] = c.cache_creation_input_tokens
        return {
            "prompt_tokens": c.input_tokens,
            "completion_tokens": c.output_tokens,
            "total_tokens": total,
            "prompt_tokens_details": details,
            "completion_tokens_details": {"reasoning_tokens": c.reasoning_tokens, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        }
    if dialect == OPENAI_RESPONSES:
        return {
            "input_tokens": c.input_tokens,
            "input_tokens_details": {"cached_tokens": c.cached_input_tokens,
                                     "cache_write_tokens": c.cache_creation_input_tokens},
            "output_tokens": c.output_tokens,
            "output_tokens_details": {"reasoning_tokens": c.reasoning_tokens},
            "total_tokens": total,
        }
    if dialect == ANTHROPIC:
        return {
            "input_tokens": c.uncached_input_tokens,
            "cache_creation_input_tokens": c.cache_creation_input_tokens,
            "cache_read_input_tokens": c.cached_input_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": c.cache_write_short_tokens,
                               "ephemeral_1h_input_tokens": c.cache_write_long_tokens},
            "output_tokens": c.output_tokens,
        }
    if dialect == GEMINI:
        out: dict[str, Any] = {"promptTokenCount": c.input_tokens,
                               "candidatesTokenCount": c.output_tokens - c.reasoning_tokens}
        if c.cached_input_tokens:
            out["cachedContentTokenCount"] = c.cached_input_tokens
        if c.reasoning_tokens:
            out["thoughtsTokenCount"] = c.reasoning_tokens
        out["totalTokenCount"] = total
        return out
    if dialect == BEDROCK:
        bedrock: dict[str, Any] = {"inputTokens": c.uncached_input_tokens, "outputTokens": c.output_tokens,
                                   "totalTokens": total, "cacheReadInputTokens": c.cached_input_tokens,
                                   "cacheWriteInputTokens": c.cache_creation_input_tokens}
        split = [{"ttl": t, "inputTokens": n} for t, n in (("1h", c.cache_write_long_tokens),
                                                            ("5m", c.cache_write_short_tokens)) if n]
        if split:
            bedrock["cacheDetails"] = split
        return bedrock
    raise ValueError(f"unknown usage dialect {dialect!r}")


def usage_for(dialect: str, usage_raw: dict[str, Any] | None) -> dict[str, Any]:
    """The usage object a `dialect` client gets for an answer whose vendor usage is `usage_raw`:
    the object itself when it is already in that dialect, else rebuilt from neutral counts."""
    if usage_raw and dialect_of(usage_raw) == dialect:
        return usage_raw
    return render_usage(dialect, normalize_usage(usage_raw))
