"""The tenant policy format (`policies/*.yaml`, one tenant a file; `_defaults.yaml` inherited).

Unknown fields are errors (`extra="forbid"`): a typo in a policy must not silently turn a layer off.
Durations are written `30s`, `5m`, `1h`, `7d` and held as seconds. Field descriptions end up in the
JSON Schema (`docs/policy.schema.json`) that editors show on hover, so they are written for users.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_PATTERN = r"^\s*\d+(\.\d+)?\s*(ms|s|m|h|d)\s*$"  # the same grammar, for the JSON Schema
KEY_REF_PATTERN = r"^(sha256:[0-9a-fA-F]{64}|env:[A-Za-z_][A-Za-z0-9_]*)$"
_SHA256_REF = re.compile(r"sha256:[0-9a-fA-F]{64}")
_ENV_REF = re.compile(r"env:[A-Za-z_][A-Za-z0-9_]*")


def parse_duration(value: object) -> float:
    """`30s`, `5m`, `1h`, `7d` (or a number of seconds) → seconds."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a duration; write 30s, 5m, 1h or 7d")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNIT[m.group(2)]
    else:
        raise ValueError(f"{value!r} is not a duration such as 30s, 5m, 1h or 7d")
    if seconds <= 0:
        raise ValueError("a duration must be positive")
    return seconds


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    WithJsonSchema({
        "anyOf": [
            {"type": "string", "pattern": DURATION_PATTERN},
            {"type": "number", "exclusiveMinimum": 0},
        ],
        "description": "A duration: 30s, 5m, 1h, 7d (also ms), or a number of seconds.",
    }),
]


def _key_ref(value: str) -> str:
    # The message must never repeat the value: it may be a plain key pasted by mistake.
    if _SHA256_REF.fullmatch(value):
        return value.lower()  # sha256sum prints lowercase; accept either, store one form
    if _ENV_REF.fullmatch(value):
        return value
    raise ValueError(
        "must be 'sha256:<64 hex digits>' or 'env:VARNAME', never a plain key "
        "(digest: printf %s \"$KEY\" | sha256sum)"
    )


# One api_keys entry. Validated per item so an error names the exact entry (api_keys[2]) and line.
KeyRef = Annotated[
    str,
    AfterValidator(_key_ref),
    WithJsonSchema({
        "type": "string",
        "pattern": KEY_REF_PATTERN,
        "description": "sha256:<hex digest of the key> or env:VARNAME (the variable holds the key).",
    }),
]


def _regex(pattern: str) -> str:
    try:
        # Compiled the way the layers use them (case-insensitive) so what validates here works there.
        re.compile(pattern, re.IGNORECASE)
    except re.error as e:  # re.error is not a ValueError: pydantic would let it escape as a crash
        raise ValueError(f"not a valid regular expression: {e}") from None
    return pattern


Regex = Annotated[str, AfterValidator(_regex), WithJsonSchema({"type": "string", "format": "regex"})]

# A model name as vendors spell them (also `vllm/name`, `bedrock/us.anthropic...:0`); no spaces or `..`.
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}")


def _model_name(value: str) -> str:
    if not _MODEL_NAME.fullmatch(value) or ".." in value:
        raise ValueError(f"{value[:60]!r} is not a model name (letters, digits and . _ : / @ -; at most 200)")
    return value


ModelName = Annotated[str, AfterValidator(_model_name),
                      WithJsonSchema({"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$"})]

Route = Literal["chat", "responses", "messages", "generate", "converse", "embeddings"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ResponseCachePolicy(_Strict):
    """Exact response cache: a byte-identical request (after normalisation) gets the stored answer."""

    enabled: bool = True
    ttl: Duration = Field(3600.0, description="How long an answer is kept (30s, 5m, 1h, 7d).")
    scope: Literal["tenant", "user"] = Field(
        "tenant", description="Who shares entries: the whole tenant, or each x-gateway-user alone.")
    # Model-name globs (fnmatch); empty = every model. `exclude_models` wins over `models`.
    models: list[str] = Field(default_factory=list, description="Model-name globs cached; empty = every model.")
    exclude_models: list[str] = Field(
        default_factory=list, description="Model-name globs never cached; wins over `models`.")
    # Endpoints: chat, responses, messages, generate, embeddings; empty = all.
    routes: list[Route] = Field(default_factory=list, description="Endpoints cached; empty = all.")
    cache_truncated: bool = Field(
        False, description="Also store answers cut by max_tokens (finish_reason length).")
    stale_if_error: Duration | None = Field(
        None, description="Keep answers this long past their ttl and serve one, marked stale, when the vendor "
                          "fails (5xx, 429, timeout, unreachable); unset: never serve stale.")


class SemanticCachePolicy(_Strict):
    """Semantic cache: a question close enough in meaning to a stored one gets its answer."""

    enabled: bool = False
    threshold: float = Field(0.90, ge=0.0, le=1.0, description="Similarity needed for a hit (0..1).")
    ttl: Duration = Field(86400.0, description="How long an entry is kept (30s, 5m, 1h, 7d).")
    version: str = Field(
        "", description="Knowledge/document version: changing it makes every older entry miss. Quote it.")
    max_history_turns: int = Field(3, ge=1, le=100, description="Longer conversations skip the layer.")
    cache_tool_requests: bool = Field(False, description="Also cache requests that carry tool calls/results.")
    # Regexes (case-insensitive) of questions never written: time-sensitive words, PII.
    exclude_patterns: list[Regex] = Field(
        default_factory=list,
        description="Case-insensitive regexes of questions this layer skips (time-sensitive words, personal data).")
    # Tenant lexicons for the second-stage guard: groups of terms that must not be swapped
    # (e.g. plan names, product names). Each group is a list of mutually exclusive terms.
    exclusive_terms: list[list[str]] = Field(
        default_factory=list,
        description="Groups of mutually exclusive terms (plan names, products): a hit must not swap them.")
    # Learning from evidence (the reworded lane: questions that share few words). Before any
    # evidence such a question misses; it is served once the observed error rate at its similarity
    # is below this bound with 95 % confidence.
    max_error_rate: float = Field(
        0.01, gt=0.0, lt=0.5,
        description="Largest error rate accepted for reworded-question hits, bounded from observed outcomes.")
    verify_share: float = Field(
        0.02, ge=0.0, le=1.0,
        description="Share of would-be hits sent upstream anyway; the fresh answer is compared with the cached one.")
    judge_model: str | None = Field(
        None, min_length=1, max_length=200,
        description="Model (served over an OpenAI-compatible upstream) that judges, in the background, "
                    "whether a cached answer serves a new question. Unset: no judge.")
    cross_language: bool = Field(
        False, description="Allow hits between languages; only through the reworded lane's evidence.")


class PromptRewritePolicy(_Strict):
    """Rewrite prompts into a stable prefix so provider prompt caches hit."""

    enabled: bool = False
    # Extra regexes of volatile content the tenant knows about (moved out of the stable prefix).
    volatile_patterns: list[Regex] = Field(
        default_factory=list, description="Regexes of volatile content moved out of the stable prefix.")
    sort_tools: bool = Field(True, description="Sort tool definitions by name so their order is stable.")


class AnthropicCachePolicy(_Strict):
    enabled: bool = Field(True, description="Add cache_control breakpoints when the break-even says so.")
    ttl: Literal["auto", "5m", "1h"] = Field("auto", description="Cache write TTL: auto picks by expected reuse.")


class GeminiCachePolicy(_Strict):
    enabled: bool = Field(False, description="Create explicit CachedContent for long stable prefixes.")
    ttl: Duration = Field(3600.0, description="CachedContent lifetime (30s, 5m, 1h, 7d).")
    min_expected_reuses: float = Field(
        2.0, ge=1.0, description="Expected re-uses assumed before any re-use was observed.")


class OpenAICachePolicy(_Strict):
    prompt_cache_key: Literal["auto", "off"] = Field(
        "auto", description="auto: send a prompt_cache_key derived from the stable prefix; off: never.")
    retention: Literal["unset", "in_memory", "24h"] = Field(
        "unset", description="prompt_cache_retention to request; unset sends nothing.")
    breakpoints: Literal["auto", "off"] = Field(
        "auto", description="GPT-5.6 and later: place prompt_cache_breakpoint markers when the break-even says so, "
                            "and send a prompt template whose writes are never read in explicit mode (no writes); "
                            "off: leave the vendor's implicit caching as it is.")


class ProviderCachePolicy(_Strict):
    anthropic: AnthropicCachePolicy = AnthropicCachePolicy()
    gemini: GeminiCachePolicy = GeminiCachePolicy()
    openai: OpenAICachePolicy = OpenAICachePolicy()
    bedrock: AnthropicCachePolicy | None = Field(
        None, description="Bedrock cachePoint blocks (placed by the Anthropic rule); unset: the anthropic block's.")
    learn: bool = Field(
        True, description="Decide cache writes from what the vendors reported for earlier writes of the same "
                          "prompt template (stop writing a prefix whose writes are never read back); false: "
                          "decide from the priors alone.")
    vendor_diagnostics: bool = Field(
        False, description="Ask the vendor why a prompt missed its cache where it can say (Anthropic cache "
                           "diagnostics, OpenAI prompt_cache_diagnostics) and record its answer beside the "
                           "gateway's own.")


class TenantPolicy(_Strict):
    """One tenant's policy: one file in the policy folder, merged over `_defaults.yaml`."""

    tenant: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.-]+$",
                        description="The tenant's name: labels metrics, usage and cache entries.")
    # "sha256:<64 hex>" or "env:VARNAME"; never a plain key.
    api_keys: list[KeyRef] = Field(
        min_length=1, description="Keys that identify this tenant: sha256:<hex digest> or env:VARNAME.")
    # Whose vendor key goes upstream: the gateway's own (`gateway`) or the caller's (`passthrough`,
    # BYOK: the caller's key is sent to the vendor; it still must be a tenant key to get in).
    upstream_keys: Literal["gateway", "passthrough"] = Field(
        "gateway",
        description="gateway: the gateway's vendor keys go upstream; passthrough (BYOK): the caller's key does.")
    response_cache: ResponseCachePolicy = ResponseCachePolicy()
    semantic_cache: SemanticCachePolicy = SemanticCachePolicy()
    prompt_rewrite: PromptRewritePolicy = PromptRewritePolicy()
    provider_cache: ProviderCachePolicy = ProviderCachePolicy()
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024, description="Largest request body accepted, in bytes.")
    model_aliases: dict[ModelName, ModelName] = Field(
        default_factory=dict,
        description="The tenant's own model names: alias → the model it stands for (resolved once, before "
                    "routing and caching).")
