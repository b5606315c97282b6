"""Vendor usage objects → one set of neutral token counts, never counting a token twice.

The vendors disagree on what "input" means, which is the second most common bug class among peer
gateways (double-billed cached tokens):

- `openai_chat`: `prompt_tokens` INCLUDES cache reads (`prompt_tokens_details.cached_tokens`) and
  writes (`prompt_tokens_details.cache_write_tokens`, GPT-5.6+);
- `openai_responses`: `input_tokens` INCLUDES reads (`input_tokens_details.cached_tokens`) and writes
  (`input_tokens_details.cache_write_tokens`, split by `cache_write_tokens_details.ttl_30m/12h_tokens`);
- `anthropic`: `input_tokens` EXCLUDES both: reads are `cache_read_input_tokens`, writes
  `cache_creation_input_tokens` (split by `cache_creation.ephemeral_5m/1h_input_tokens`);
- `gemini`: `promptTokenCount` INCLUDES `cachedContentTokenCount`; no write count (explicit caches
  bill storage instead);
- `deepseek`: `prompt_tokens` = `prompt_cache_hit_tokens` + `prompt_cache_miss_tokens`; no write count
  (misses build the cache at no premium);
- `bedrock` (Converse): `inputTokens` EXCLUDES both, like Anthropic's: reads are `cacheReadInputTokens`,
  writes `cacheWriteInputTokens` (split by TTL in `cacheDetails [{ttl: 5m|1h, inputTokens}]`).

Neutral counts (the contract's usage record): `input_tokens` is every prompt token, read from or
written to a provider cache or neither; `cached_input_tokens` the part read from the cache;
`cache_creation_input_tokens` the part written to it (`cache_write_long_tokens` of which at the
vendor's longer retention: Anthropic 1h, OpenAI 12h); `output_tokens` every generated token,
reasoning included (Gemini: candidates + thoughts). vLLM speaks `openai_chat`.

Every reader is robust to missing, null or odd-typed fields (they count as 0): a usage object is
the vendor's, and a malformed one must never fail the request's accounting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

OPENAI_CHAT = "openai_chat"
OPENAI_RESPONSES = "openai_responses"
ANTHROPIC = "anthropic"
GEMINI = "gemini"
DEEPSEEK = "deepseek"
BEDROCK = "bedrock"
DIALECTS = (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC, GEMINI, DEEPSEEK, BEDROCK)


@dataclass(slots=True, frozen=True)
class NormalizedUsage:
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_write_long_tokens: int = 0  # subset of cache_creation_input_tokens written at the long TTL
    output_tokens: int = 0
    reasoning_tokens: int = 0  # subset of output_tokens
    total_tokens: int = 0

    @property
    def cache_read_input_tokens(self) -> int:
        return self.cached_input_tokens

    @property
    def cache_write_short_tokens(self) -> int:
        return self.cache_creation_input_tokens - self.cache_write_long_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """Prompt tokens neither read from nor written to a provider cache (full input price)."""
        return self.input_tokens - self.cached_input_tokens - self.cache_creation_input_tokens

    def as_fields(self) -> dict[str, int]:
        """The usage-record token fields."""
        return {
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cached_input_tokens,
            "cache_write_long_tokens": self.cache_write_long_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "total_tokens": self.total_tokens,
        }


ZERO = NormalizedUsage()


def _n(value: Any) -> int:
    """A token count from whatever the vendor sent: ints, integral floats, digit strings; else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(0, value)
    if isinstance(value, float) and value == value and value >= 0:  # not NaN
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _build(input_tokens: int, cached: int, creation: int, long_write: int, output: int, reasoning: int,
           total: int | None) -> NormalizedUsage:
    # Vendor inconsistencies (more cached than prompt tokens, a 1h split larger than the write) are
    # clamped so that uncached input never goes negative; the raw object is kept beside the record.
    cached = min(cached, input_tokens)
    creation = min(creation, input_tokens - cached)
    long_write = min(long_write, creation)
    reasoning = min(reasoning, output)
    return NormalizedUsage(input_tokens, cached, creation, long_write, output, reasoning,
                           total if total else input_tokens + output)


def _openai_chat(u: Mapping[str, Any]) -> NormalizedUsage:
    pd = _obj(u.get("prompt_tokens_details"))
    cd = _obj(u.get("completion_tokens_details"))
    # Chat Completions has one write retention (30m); no long split.
    return _build(_n(u.get("prompt_tokens")), _n(pd.get("cached_tokens")), _n(pd.get("cache_write_tokens")), 0,
                  _n(u.get("completion_tokens")), _n(cd.get("reasoning_tokens")), _n(u.get("total_tokens")))


def _openai_responses(u: Mapping[str, Any]) -> NormalizedUsage:
    idt = _obj(u.get("input_tokens_details"))
    odt = _obj(u.get("output_tokens_details"))
    wdt = _obj(idt.get("cache_write_tokens_details"))
    return _build(_n(u.get("input_tokens")), _n(idt.get("cached_tokens")), _n(idt.get("cache_write_tokens")),
                  _n(wdt.get("ttl_12h_tokens")), _n(u.get("output_tokens")), _n(odt.get("reasoning_tokens")),
                  _n(u.get("total_tokens")))


def _anthropic(u: Mapping[str, Any]) -> NormalizedUsage:
    # input_tokens counts only what follows the last breakpoint: reads and writes are added here
    # ("total_input_tokens = cache_read + cache_creation + input_tokens", Anthropic's docs).
    read = _n(u.get("cache_read_input_tokens"))
    cc = _obj(u.get("cache_creation"))
    five, hour = _n(cc.get("ephemeral_5m_input_tokens")), _n(cc.get("ephemeral_1h_input_tokens"))
    write = _n(u.get("cache_creation_input_tokens"))
    if not write and (five or hour):  # a split without the total: the split is the total
        write = five + hour
    od = _obj(u.get("output_tokens_details"))
    # No total_tokens in Anthropic's usage: derive it.
    return _build(_n(u.get("input_tokens")) + read + write, read, write, hour,
                  _n(u.get("output_tokens")), _n(od.get("thinking_tokens")), None)


def _gemini(u: Mapping[str, Any]) -> NormalizedUsage:
    # promptTokenCount includes cachedContentTokenCount. Tool-use prompt tokens (the model's own
    # tool calls fed back, e.g. search results) are billed as input but are not in promptTokenCount.
    # Thoughts are billed as output and are not in candidatesTokenCount.
    thoughts = _n(u.get("thoughtsTokenCount"))
    prompt = _n(u.get("promptTokenCount")) + _n(u.get("toolUsePromptTokenCount"))
    output = _n(u.get("candidatesTokenCount")) + thoughts
    return _build(prompt, _n(u.get("cachedContentTokenCount")), 0, 0, output, thoughts,
                  _n(u.get("totalTokenCount")))


def _deepseek(u: Mapping[str, Any]) -> NormalizedUsage:
    hit, miss = _n(u.get("prompt_cache_hit_tokens")), _n(u.get("prompt_cache_miss_tokens"))
    prompt = _n(u.get("prompt_tokens")) or hit + miss
    if not hit:  # newer DeepSeek bodies also carry OpenAI's field (same number): never add both
        hit = _n(_obj(u.get("prompt_tokens_details")).get("cached_tokens"))
    cd = _obj(u.get("completion_tokens_details"))
    return _build(prompt, hit, 0, 0, _n(u.get("completion_tokens")), _n(cd.get("reasoning_tokens")),
                  _n(u.get("total_tokens")))


def _bedrock(u: Mapping[str, Any]) -> NormalizedUsage:
    # Converse's inputTokens is what was neither read nor written (input = inputTokens + read + write).
    read, write = _n(u.get("cacheReadInputTokens")), _n(u.get("cacheWriteInputTokens"))
    raw = u.get("cacheDetails")
    details: list[Any] = raw if isinstance(raw, list) else []
    hour = sum(_n(d.get("inputTokens")) for d in details if isinstance(d, Mapping) and d.get("ttl") == "1h")
    if not write and details:
        write = sum(_n(d.get("inputTokens")) for d in details if isinstance(d, Mapping))
    prompt = _n(u.get("inputTokens")) + read + write
    output = _n(u.get("outputTokens"))
    return _build(prompt, read, write, hour, output, 0, prompt + output)


_READERS: dict[str, Callable[[Mapping[str, Any]], NormalizedUsage]] = {
    OPENAI_CHAT: _openai_chat,
    OPENAI_RESPONSES: _openai_responses,
    ANTHROPIC: _anthropic,
    GEMINI: _gemini,
    DEEPSEEK: _deepseek,
    BEDROCK: _bedrock,
}


def normalize(dialect: str, usage_raw: Mapping[str, Any] | None) -> NormalizedUsage:
    """Neutral counts of `usage_raw` read in `dialect` (an empty or missing object → all zeros)."""
    reader = _READERS.get(dialect)
    if reader is None:
        raise ValueError(f"unknown usage dialect {dialect!r}; one of {', '.join(_READERS)}")
    if not usage_raw or not isinstance(usage_raw, Mapping):
        return ZERO
    return reader(usage_raw)


def sniff_dialect(usage_raw: Mapping[str, Any] | None) -> str | None:
    """The dialect a usage object is written in, from its field names (None when unknown).

    For records whose upstream protocol is not known first-hand (a cached answer replayed later).
    """
    if not usage_raw:
        return None
    if "promptTokenCount" in usage_raw or "candidatesTokenCount" in usage_raw or "totalTokenCount" in usage_raw:
        return GEMINI
    if "inputTokens" in usage_raw or "outputTokens" in usage_raw:
        return BEDROCK
    if "prompt_cache_hit_tokens" in usage_raw or "prompt_cache_miss_tokens" in usage_raw:
        return DEEPSEEK
    if "prompt_tokens" in usage_raw or "completion_tokens" in usage_raw:
        return OPENAI_CHAT
    if "input_tokens" in usage_raw or "output_tokens" in usage_raw:
        # Responses always has total_tokens and input_tokens_details; Anthropic has neither.
        if "total_tokens" in usage_raw or "input_tokens_details" in usage_raw:
            return OPENAI_RESPONSES
        return ANTHROPIC
    return None


# Adapter names (gateway/protocols) → usage dialects.
_PROTOCOL_DIALECT = {
    "openai_chat": OPENAI_CHAT,
    "openai_responses": OPENAI_RESPONSES,
    "anthropic_messages": ANTHROPIC,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
    "bedrock_converse": BEDROCK,
}


def dialect_for(upstream_protocol: str | None, declared: str | None = None) -> str:
    """The usage dialect of an answer spoken in `upstream_protocol`: the vendor's own when its spec
    declares one (`declared`: DeepSeek's, or a configured upstream's `usage_dialect: deepseek`), else
    the protocol's (vLLM and other OpenAI-compatible upstreams speak `openai_chat`)."""
    if declared is not None:
        return declared
    return _PROTOCOL_DIALECT.get(upstream_protocol or "", OPENAI_CHAT)


def expected_dialect(ctx: Any) -> str:
    """`dialect_for` a request context: its upstream protocol and its vendor's declared dialect."""
    vendor = ctx.vendor
    declared = vendor.usage.name if vendor is not None and vendor.usage is not None else None
    return dialect_for(ctx.upstream_adapter.name if ctx.upstream_adapter is not None else None, declared)


def register_reader(dialect: str, read: Callable[[Mapping[str, Any]], NormalizedUsage]) -> None:
    """A vendor's own usage dialect (declared in its spec), readable by name from then on."""
    _READERS.setdefault(dialect, read)


def reader(dialect: str) -> Callable[[Mapping[str, Any]], NormalizedUsage]:
    return _READERS[dialect]


# For vendor modules writing a reader of their own dialect.
count = _n
section = _obj
build = _build
