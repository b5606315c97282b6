"""Usage objects across vendor dialects.

An `Answer` keeps its vendor's usage object untouched (`usage_raw`). When that answer is rendered
in the same dialect, the object goes out as it came in. When it is rendered in another dialect
(a cross-protocol call, e.g. an OpenAI client answered by Claude) the usage is rebuilt in the
client's own fields from neutral counts, so that the client's arithmetic stays right: OpenAI's
`prompt_tokens` and Gemini's `promptTokenCount` include cached tokens, Anthropic's `input_tokens`
does not (the double-billing bug class listed in the gateway pitfalls).

`normalize_usage` gives the counts the usage record uses (CONTRACT: `input_tokens` counts every
prompt token, cached ones included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPENAI_CHAT = "openai_chat"
OPENAI_RESPONSES = "openai_responses"
ANTHROPIC = "anthropic_messages"
GEMINI = "gemini"


@dataclass(slots=True, frozen=True)
class UsageCounts:
    input_tokens: int = 0  # every prompt token, including those read from / written to a provider cache
    cached_input_tokens: int = 0  # read from the provider cache (= cache_read_input_tokens)
    cache_creation_input_tokens: int = 0  # written to the provider cache
    output_tokens: int = 0  # every generated token, reasoning included
    reasoning_tokens: int = 0  # the reasoning part of output_tokens

    @property
    def cache_read_input_tokens(self) -> int:
        return self.cached_input_tokens

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def as_record(self) -> dict[str, int]:
        """The usage-record token fields of the contract."""
        return {
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cached_input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def dialect_of(usage: dict[str, Any] | None) -> str | None:
    """Which adapter dialect a usage object is written in (None for an empty or unknown object)."""
    if not usage:
        return None
    if "promptTokenCount" in usage or "candidatesTokenCount" in usage or "totalTokenCount" in usage:
        return GEMINI
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        return OPENAI_CHAT  # also DeepSeek and vLLM
    if "input_tokens" in usage or "output_tokens" in usage:
        # Responses always has total_tokens and input_tokens_details; Anthropic has neither.
        if "total_tokens" in usage or "input_tokens_details" in usage:
            return OPENAI_RESPONSES
        return ANTHROPIC
    return None


def normalize_usage(usage: dict[str, Any] | None) -> UsageCounts:
    """Neutral counts from a usage object in any dialect."""
    dialect = dialect_of(usage)
    if dialect is None or usage is None:
        return UsageCounts()
    if dialect == OPENAI_CHAT:
        pd = usage.get("prompt_tokens_details") or {}
        cd = usage.get("completion_tokens_details") or {}
        cached = _int(pd.get("cached_tokens")) or _int(usage.get("prompt_cache_hit_tokens"))  # DeepSeek
        return UsageCounts(_int(usage.get("prompt_tokens")), cached, _int(pd.get("cache_write_tokens")),
                           _int(usage.get("completion_tokens")), _int(cd.get("reasoning_tokens")))
    if dialect == OPENAI_RESPONSES:
        idt = usage.get("input_tokens_details") or {}
        odt = usage.get("output_tokens_details") or {}
        return UsageCounts(_int(usage.get("input_tokens")), _int(idt.get("cached_tokens")),
                           _int(idt.get("cache_write_tokens")), _int(usage.get("output_tokens")),
                           _int(odt.get("reasoning_tokens")))
    if dialect == ANTHROPIC:
        read = _int(usage.get("cache_read_input_tokens"))
        write = _int(usage.get("cache_creation_input_tokens"))
        odt = usage.get("output_tokens_details") or {}
        return UsageCounts(_int(usage.get("input_tokens")) + read + write, read, write,
                           _int(usage.get("output_tokens")), _int(odt.get("thinking_tokens")))
    # Gemini: promptTokenCount includes cachedContentTokenCount; thoughts are billed as output.
    thoughts = _int(usage.get("thoughtsTokenCount"))
    return UsageCounts(_int(usage.get("promptTokenCount")) + _int(usage.get("toolUsePromptTokenCount")),
                       _int(usage.get("cachedContentTokenCount")), 0,
                       _int(usage.get("candidatesTokenCount")) + thoughts, thoughts)


def render_usage(dialect: str, c: UsageCounts) -> dict[str, Any]:
    """`c` written in `dialect`'s own usage fields."""
    if dialect == OPENAI_CHAT:
        details: dict[str, int] = {"cached_tokens": c.cached_input_tokens, "audio_tokens": 0}
        if c.cache_creation_input_tokens:
            details["cache_write_tokens"] = c.cache_creation_input_tokens
        return {
            "prompt_tokens": c.input_tokens,
            "completion_tokens": c.output_tokens,
            "total_tokens": c.total_tokens,
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
            "total_tokens": c.total_tokens,
        }
    if dialect == ANTHROPIC:
        return {
            "input_tokens": max(0, c.input_tokens - c.cached_input_tokens - c.cache_creation_input_tokens),
            "cache_creation_input_tokens": c.cache_creation_input_tokens,
            "cache_read_input_tokens": c.cached_input_tokens,
            "output_tokens": c.output_tokens,
        }
    if dialect == GEMINI:
        out: dict[str, Any] = {"promptTokenCount": c.input_tokens,
                               "candidatesTokenCount": c.output_tokens - c.reasoning_tokens}
        if c.cached_input_tokens:
            out["cachedContentTokenCount"] = c.cached_input_tokens
        if c.reasoning_tokens:
            out["thoughtsTokenCount"] = c.reasoning_tokens
        out["totalTokenCount"] = c.total_tokens
        return out
    raise ValueError(f"unknown usage dialect {dialect!r}")


def usage_for(dialect: str, usage_raw: dict[str, Any] | None) -> dict[str, Any]:
    """The usage object a `dialect` client gets for an answer whose vendor usage is `usage_raw`:
    the object itself when it is already in that dialect, else rebuilt from neutral counts."""
    if usage_raw and dialect_of(usage_raw) == dialect:
        return usage_raw
    return render_usage(dialect, normalize_usage(usage_raw))
