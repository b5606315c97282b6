"""The tenant policy format (`policies/*.yaml`, one tenant a file; `_defaults.yaml` inherited).

Unknown fields are errors (`extra="forbid"`): a typo in a policy must not silently turn a layer off.
Durations are written `30s`, `5m`, `1h`, `7d` and held as seconds.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: object) -> float:
    """`30s`, `5m`, `1h`, `7d` (or a number of seconds) → seconds."""
    if isinstance(value, bool):
        raise ValueError("a duration such as 30s, 5m, 1h or 7d")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNIT[m.group(2)]
    else:
        raise ValueError(f"{value!r} is not a duration such as 30s, 5m, 1h or 7d")
    if seconds <= 0:
        raise ValueError("a duration must be positive")
    return seconds


Duration = Annotated[float, BeforeValidator(parse_duration)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ResponseCachePolicy(_Strict):
    enabled: bool = True
    ttl: Duration = 3600.0
    scope: Literal["tenant", "user"] = "tenant"
    # Model-name globs (fnmatch); empty = every model. `exclude_models` wins over `models`.
    models: list[str] = Field(default_factory=list)
    exclude_models: list[str] = Field(default_factory=list)
    # Endpoints: chat, responses, messages, generate, embeddings; empty = all.
    routes: list[str] = Field(default_factory=list)
    cache_truncated: bool = False  # store answers cut by max_tokens (finish_reason "length")


class SemanticCachePolicy(_Strict):
    enabled: bool = False
    threshold: float = Field(0.90, ge=0.0, le=1.0)
    ttl: Duration = 86400.0
    version: str = ""  # knowledge/document version: bumping it makes every older entry miss
    max_history_turns: int = Field(3, ge=1, le=100)  # longer conversations skip the layer
    cache_tool_requests: bool = False  # requests with tool calls/results skip the layer by default
    # Regexes (case-insensitive) of questions never written: time-sensitive words, PII.
    exclude_patterns: list[str] = Field(default_factory=list)
    # Tenant lexicons for the second-stage guard: groups of terms that must not be swapped
    # (e.g. plan names, product names). Each group is a list of mutually exclusive terms.
    exclusive_terms: list[list[str]] = Field(default_factory=list)

    @field_validator("exclude_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            re.compile(p)
        return patterns


class PromptRewritePolicy(_Strict):
    enabled: bool = False
    # Extra regexes of volatile content the tenant knows about (moved out of the stable prefix).
    volatile_patterns: list[str] = Field(default_factory=list)
    sort_tools: bool = True

    @field_validator("volatile_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            re.compile(p)
        return patterns


class AnthropicCachePolicy(_Strict):
    enabled: bool = True
    ttl: Literal["auto", "5m", "1h"] = "auto"


class GeminiCachePolicy(_Strict):
    enabled: bool = False
    ttl: Duration = 3600.0
    min_expected_reuses: float = Field(2.0, ge=1.0)  # prior for N before any re-use was observed


class OpenAICachePolicy(_Strict):
    prompt_cache_key: Literal["auto", "off"] = "auto"
    retention: Literal["unset", "in_memory", "24h"] = "unset"


class ProviderCachePolicy(_Strict):
    anthropic: AnthropicCachePolicy = AnthropicCachePolicy()
    gemini: GeminiCachePolicy = GeminiCachePolicy()
    openai: OpenAICachePolicy = OpenAICachePolicy()


class TenantPolicy(_Strict):
    tenant: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.-]+$")
    # "sha256:<64 hex>" or "env:VARNAME"; never a plain key.
    api_keys: list[str] = Field(min_length=1)
    # Whose vendor key goes upstream: the gateway's own (`gateway`) or the caller's (`passthrough`,
    # BYOK: the caller's key is sent to the vendor; it still must be a tenant key to get in).
    upstream_keys: Literal["gateway", "passthrough"] = "gateway"
    response_cache: ResponseCachePolicy = ResponseCachePolicy()
    semantic_cache: SemanticCachePolicy = SemanticCachePolicy()
    prompt_rewrite: PromptRewritePolicy = PromptRewritePolicy()
    provider_cache: ProviderCachePolicy = ProviderCachePolicy()
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024)

    @field_validator("api_keys")
    @classmethod
    def _key_refs(cls, keys: list[str]) -> list[str]:
        for key in keys:
            if re.fullmatch(r"sha256:[0-9a-f]{64}", key):
                continue
            if re.fullmatch(r"env:[A-Za-z_][A-Za-z0-9_]*", key):
                continue
            raise ValueError("api_keys entries must be 'sha256:<64 lowercase hex>' or 'env:VARNAME', never a plain key")
        return keys
