"""The exact-cache key: who asks, through which door, of which model, with which body.

The key is the SHA-256 of canonical JSON (sorted keys, normalised numbers) of:
- server-side identity: the tenant found from the API key (never from the body) and, when the
  policy's scope is `user`, the `x-gateway-user`;
- the client protocol and endpoint (plus the Gemini API version from the path), the resolved
  provider and model;
- the request headers that change what the vendor answers (`HEADERS_IN_KEY`);
- the client's body, whole, minus the transport fields below.

It is a deny-list on purpose: a parameter nobody has thought about yet (a new vendor option) is part
of the key until someone decides it cannot change the answer. Allow-lists drop new parameters
silently and then serve one request's answer to another (LiteLLM PR #25673; OmniRoute #12307).

Fields left out, and why (`TRANSPORT_FIELDS`):
- `stream`: the shape of the reply, not its content; a stored answer is replayed in either shape.
- `stream_options` (OpenAI Chat/Responses: `include_usage`, `include_obfuscation`): framing of
  the stream only.
- `request_id` (vLLM's OpenAI-compatible extension): a per-request identifier.
- `prompt_cache_key`, `prompt_cache_retention` (OpenAI): routing hint and lifetime of OpenAI's own
  prompt cache; they change cost and `cached_tokens`, never the generated answer.
Kept although they look like transport, and why:
- `prompt_cache_options`: its `prewarm: true` makes OpenAI answer without generating output, and
  `comparison_response_id` adds diagnostics to the answer.
- `user`, `safety_identifier`, `metadata`, `store`, `service_tier`: they do not change the text, but
  they carry identity or side effects a caller may rely on; keeping them costs only hit rate.
Headers, the query string (Gemini's `?key=`) and the caller's API key never enter the key.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson

from gateway.context import RequestContext

KEY_VERSION = 1  # bump when the canonical form changes: old entries then simply miss

TRANSPORT_FIELDS: dict[str, frozenset[str]] = {
    "openai_chat": frozenset({"stream", "stream_options", "request_id", "prompt_cache_key",
                              "prompt_cache_retention"}),
    "openai_responses": frozenset({"stream", "stream_options", "prompt_cache_key", "prompt_cache_retention"}),
    "anthropic_messages": frozenset({"stream"}),
    "gemini": frozenset(),  # streaming is chosen by the path (`:streamGenerateContent`)
}
_DEFAULT_TRANSPORT = frozenset({"stream", "stream_options"})

# Request headers the gateway forwards upstream that select vendor behaviour (beta features such
# as longer outputs or extended thinking, API version). Every other header is transport or identity.
HEADERS_IN_KEY = ("anthropic-beta", "anthropic-version", "openai-beta")

_MAX_SAFE_INT = 2**53


def canonical(value: Any) -> Any:
    """`value` with numbers in one form: 1.0 → 1, -0.0 → 0; other floats keep their shortest repr.

    Booleans stay booleans (JSON `true` is not `1`). Non-finite floats cannot come from JSON bodies
    but are mapped to tagged strings rather than raising."""
    kind = type(value)  # exact-type checks first: this walks every node of every request body
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): canonical(v) for k, v in value.items()}
    if kind is list:
        return [canonical(v) for v in value]
    if isinstance(value, str | bool):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return {"$float": repr(value)}
        if value.is_integer() and abs(value) < _MAX_SAFE_INT:
            return int(value)
        return value
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    return value


def canonical_bytes(data: Any) -> bytes:
    return orjson.dumps(canonical(data), option=orjson.OPT_SORT_KEYS)


def key_material(ctx: RequestContext, user_scope: bool) -> dict[str, Any]:
    """Everything the key is made of (exposed for tests and debugging; never sent anywhere)."""
    protocol = ctx.adapter.name
    drop = TRANSPORT_FIELDS.get(protocol, _DEFAULT_TRANSPORT)
    body = {k: v for k, v in ctx.body.items() if k not in drop}
    return {"v": KEY_VERSION, **identity_material(ctx, user_scope), "body": body}


def identity_material(ctx: RequestContext, user_scope: bool) -> dict[str, Any]:
    """Who asks and where the question goes: the part every cache key (exact and semantic) shares.
    The tenant comes from the API key, never from the body."""
    return {
        "tenant": ctx.tenant,
        "user": ctx.user if user_scope else None,
        "protocol": ctx.adapter.name,
        "endpoint": ctx.endpoint,
        "api_version": ctx.scratch.get("api_version"),
        "provider": ctx.provider,
        "model": ctx.model,
        "headers": {h: ctx.headers[h] for h in HEADERS_IN_KEY if h in ctx.headers},
    }


def cache_key(ctx: RequestContext, user_scope: bool) -> str:
    """Hex SHA-256 of the canonical key material."""
    return hashlib.sha256(canonical_bytes(key_material(ctx, user_scope))).hexdigest()


def entry_key(tenant: str, digest: str) -> str:
    """Where the entry lives. The `{tenant}` hash tag keeps a tenant's entries in one cluster slot,
    so a per-tenant purge scans one node; the tenant prefix makes the purge a prefix scan."""
    return f"{tenant_prefix(tenant)}{digest}"


def tenant_prefix(tenant: str) -> str:
    return f"gw:rc:{{{tenant}}}:"


def lock_key(tenant: str, digest: str) -> str:
    """Single-flight lock, outside the entry prefix so a purge never counts or breaks locks."""
    return f"gw:rcl:{{{tenant}}}:{digest}"


def unreplayable(protocol: str, body: dict[str, Any]) -> str | None:
    """Why a stored answer could not reproduce this request's reply, or None.

    The neutral `Answer` holds one choice of text and tool calls; requests for several choices,
    log-probabilities or a background job would get less from a replay than from the vendor, so
    they bypass the cache."""
    if protocol == "openai_chat":
        if _num(body.get("n"), 1) > 1:
            return "n > 1"
        if body.get("logprobs") or body.get("top_logprobs"):
            return "logprobs"
        if "audio" in (body.get("modalities") or ()):
            return "audio output"
    elif protocol == "openai_responses":
        if body.get("background"):
            return "background"
        if body.get("top_logprobs") or any("logprobs" in str(i) for i in body.get("include") or ()):
            return "logprobs"
    elif protocol == "gemini":
        config = body.get("generationConfig") or body.get("generation_config") or {}
        if isinstance(config, dict):
            if _num(config.get("candidateCount", config.get("candidate_count")), 1) > 1:
                return "candidateCount > 1"
            if config.get("responseLogprobs") or config.get("response_logprobs"):
                return "logprobs"
    return None


def _num(value: Any, default: float) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else default
