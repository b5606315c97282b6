"""Canonical hashing shared by every cache key (exact and semantic): one form of a JSON value, and the
identity part of a key (who asks, through which door, of which model). Below the cache layers, so
neither reaches into the other."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from gateway.context import RequestContext

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


def identity_material(ctx: RequestContext, user_scope: bool) -> dict[str, Any]:
    """Who asks and where the question goes: the part every cache key (exact and semantic) shares.
    The tenant comes from the API key, never from the body."""
    return {
        "tenant": ctx.tenant,
        "user": ctx.user if user_scope else None,
        "protocol": ctx.adapter.name,
        "endpoint": ctx.endpoint,
        "api_version": ctx.api_version,
        "provider": ctx.provider,
        "model": ctx.model,
        "headers": {h: ctx.headers[h] for h in HEADERS_IN_KEY if h in ctx.headers},
    }


def unreplayable(ctx: RequestContext) -> str | None:
    """Why no stored answer may stand in for this request's reply (None: one may): what the client
    protocol cannot replay (`ProtocolAdapter.unreplayable`), then what the vendor's spec adds."""
    why = ctx.adapter.unreplayable(ctx.body)
    if why is None and ctx.vendor is not None and ctx.vendor.unreplayable is not None:
        why = ctx.vendor.unreplayable(ctx.body)
    return why
