"""Policy: what the tenant's policy and the caller's headers ask of this request.

Reads `Cache-Control` (`no-cache`: skip lookups, still store; `no-store`: neither),
`x-gateway-user` (the user scope), `x-gateway-session` (routing affinity) and
`x-gateway-template: ID@VERSION` (prompt template identity for usage reports).
"""

from __future__ import annotations

from gateway.context import RequestContext
from gateway.errors import GatewayError

_MAX_HEADER_VALUE = 256
_MAX_GATEWAY_HEADERS = 32  # x-gateway-* headers on one request


def check_gateway_headers(ctx: RequestContext) -> None:
    """Every `x-gateway-*` header is bounded on every endpoint, read by the gateway or not: they end
    up in logs, usage records and cache scopes."""
    count = 0
    for name, value in ctx.headers.items():
        if name.startswith("x-gateway-"):
            count += 1
            if len(value) > _MAX_HEADER_VALUE:
                raise GatewayError(400, f"Header {name[:64]} is longer than {_MAX_HEADER_VALUE} characters.")
    if count > _MAX_GATEWAY_HEADERS:
        raise GatewayError(400, f"More than {_MAX_GATEWAY_HEADERS} x-gateway-* headers.")


def _short(ctx: RequestContext, name: str) -> str | None:
    value = ctx.headers.get(name, "").strip()
    if not value:
        return None
    if len(value) > _MAX_HEADER_VALUE:
        raise GatewayError(400, f"Header {name} is longer than {_MAX_HEADER_VALUE} characters.")
    return value


def apply_policy(ctx: RequestContext) -> None:
    check_gateway_headers(ctx)
    directives = {d.strip().split("=", 1)[0].lower() for d in ctx.headers.get("cache-control", "").split(",")}
    ctx.no_store = "no-store" in directives
    ctx.no_cache = ctx.no_store or "no-cache" in directives
    ctx.user = _short(ctx, "x-gateway-user")
    ctx.session = _short(ctx, "x-gateway-session")
    template = _short(ctx, "x-gateway-template")
    if template:
        template_id, _, version = template.partition("@")
        ctx.template_id = template_id or None
        ctx.template_version = version or None
