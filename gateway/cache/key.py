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
silently and then serve one request's answer to another.

Fields left out, and why (each protocol adapter's `transport_fields`):
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
from typing import Any

import orjson

from gateway.context import RequestContext
from gateway.keys import canonical, canonical_bytes, identity_material

__all__ = ["KEY_VERSION", "cache_key", "canonical", "canonical_bytes", "entry_key", "keep_fast_key", "key_material",
           "lock_key", "tenant_prefix"]

KEY_VERSION = 1  # bump when the canonical form changes: old entries then simply miss


def key_material(ctx: RequestContext, user_scope: bool) -> dict[str, Any]:
    """Everything the key is made of (exposed for tests and debugging; never sent anywhere)."""
    drop = ctx.adapter.transport_fields
    body = {k: v for k, v in ctx.body.items() if k not in drop}
    return {"v": KEY_VERSION, **identity_material(ctx, user_scope), "body": body}


def cache_key(ctx: RequestContext, user_scope: bool) -> str:
    """Hex SHA-256 of the canonical key material.

    A body whose exact bytes came before with the same identity gets its key from `_fast`: the body is
    the parse of those bytes (never changed after), so the key is the same, and the walk over the body
    and the sorted dump are skipped. The identity is part of the memo's key (tenants never share one).
    Only bodies that found an entry are kept (`keep_fast_key`): a stream of misses never fills it."""
    memo = _memo_key(ctx, user_scope)
    digest = _fast.get(memo) if memo is not None else None
    return digest if digest is not None else _digest(ctx, user_scope)


def keep_fast_key(ctx: RequestContext, user_scope: bool, digest: str) -> None:
    """`digest` found an entry: the next request with these exact bytes gets it from the memo."""
    memo = _memo_key(ctx, user_scope)
    if memo is not None and memo not in _fast:
        _remember(memo, digest)


def _memo_key(ctx: RequestContext, user_scope: bool) -> tuple[bytes, bytes] | None:
    raw = ctx.raw_body
    if not raw or len(raw) > FAST_KEY_MAX_BODY:
        return None
    return raw, orjson.dumps(identity_material(ctx, user_scope))


def _digest(ctx: RequestContext, user_scope: bool) -> str:
    return hashlib.sha256(canonical_bytes(key_material(ctx, user_scope))).hexdigest()


# Bodies seen recently: bounded by count and bytes (caller input never grows it past that); oldest out first.
FAST_KEYS = 4096
FAST_KEY_BYTES = 4 * 1024 * 1024
FAST_KEY_MAX_BODY = 256 * 1024
_fast: dict[tuple[bytes, bytes], str] = {}
_fast_bytes = 0


def _remember(memo: tuple[bytes, bytes], digest: str) -> None:
    global _fast_bytes
    size = len(memo[0]) + len(memo[1])
    while _fast and (len(_fast) >= FAST_KEYS or _fast_bytes + size > FAST_KEY_BYTES):
        oldest = next(iter(_fast))
        del _fast[oldest]
        _fast_bytes -= len(oldest[0]) + len(oldest[1])
    _fast[memo] = digest
    _fast_bytes += size


def entry_key(tenant: str, digest: str) -> str:
    """Where the entry lives. The `{tenant}` hash tag keeps a tenant's entries in one cluster slot,
    so a per-tenant purge scans one node; the tenant prefix makes the purge a prefix scan."""
    return f"{tenant_prefix(tenant)}{digest}"


def tenant_prefix(tenant: str) -> str:
    return f"gw:rc:{{{tenant}}}:"


def lock_key(tenant: str, digest: str) -> str:
    """Single-flight lock, outside the entry prefix so a purge never counts or breaks locks."""
    return f"gw:rcl:{{{tenant}}}:{digest}"
