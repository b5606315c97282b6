"""Endpoints the gateway forwards without caching: embeddings, model lists, token counts and
Gemini cachedContents. They are still authenticated, tenant-checked and recorded for usage."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.adapt import unknown_model, upstream_headers
from gateway.answer import Answer
from gateway.auth import authenticate
from gateway.cached_contents import CachedContentOwnership
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.handler import Gateway, read_json
from gateway.providers import Provider
from gateway.respond import error_response, json_response
from gateway.upstream.call import open_upstream


async def forward(gw: Gateway, request: Request, protocol: str, endpoint: str, path: str,
                  provider_name: str | None = None, method: str = "POST",
                  ownership: CachedContentOwnership | None = None) -> Response:
    """Authenticate, forward `method path` to the provider (by name, or by the body's model) and relay."""
    ctx = gw.new_context(request, protocol)
    ctx.endpoint = endpoint
    try:
        authenticate(ctx, gw.registry)
        if method in ("POST", "PATCH"):
            limit = min(gw.settings.max_body_bytes, ctx.policy.max_body_bytes if ctx.policy else 1 << 62)
            ctx.body = await read_json(request, limit)
        provider = _provider(gw, ctx, provider_name)
        ctx.method, ctx.native_path = method, path
        if ownership is not None:
            await ownership.before(ctx)
        ctx.provider, ctx.vendor = provider.name, provider.spec
        ctx.upstream_base_url = provider.base_url
        query = f"?{request.url.query}" if request.url.query and method == "GET" else ""
        ctx.upstream_path = _strip_key(path + query)
        ctx.upstream_body = ctx.body
        ctx.upstream_headers = upstream_headers(ctx, provider, gw.providers)
        await gw.light_pipeline.before(ctx)
        up = await open_upstream(ctx, gw.clients, gw.failover if provider.spec.pooled else None, method)
        raw = await up.response.read()
        up.release()
        ctx.status = up.status
        if up.status < 400:
            data = _json(raw)
            if ownership is not None and data is not None:
                data = await ownership.after(ctx, data)
                raw = orjson.dumps(data)
            usage = data.get("usage") if isinstance(data, dict) else None
            if isinstance(usage, dict):
                ctx.answer = Answer(text="", model=ctx.model, provider=provider.name, usage_raw=usage)
                ctx.answered_by = "upstream"
        ctx.cache_status = "bypass"
        ctx.latency_s = ctx.ttft_s = ctx.elapsed()
        gw.done(ctx, gw.light_pipeline)
        return json_response(ctx, up.status, raw, up.headers)
    except GatewayError as exc:
        ctx.cache_status = "bypass"
        response = error_response(ctx, exc)
        gw.done(ctx, gw.light_pipeline)
        return response


def _provider(gw: Gateway, ctx: RequestContext, name: str | None) -> Provider:
    if name is not None:
        provider = gw.providers.get(name)
        assert provider is not None
        return provider
    model = ctx.body.get("model")
    if not isinstance(model, str) or not model:
        raise GatewayError(400, "The request has no `model`.")
    ctx.model = model
    provider = gw.providers.for_model(model, ctx.adapter.name)
    if provider is None:
        raise unknown_model(model)
    return provider


def _strip_key(path: str) -> str:
    """Never forward the caller's `?key=` (the gateway's key goes in a header)."""
    if "?" not in path:
        return path
    base, _, query = path.partition("?")
    kept = "&".join(p for p in query.split("&") if p and not p.startswith("key="))
    return f"{base}?{kept}" if kept else base


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
