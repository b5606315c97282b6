"""Endpoints the gateway forwards without caching: embeddings, model lists, token counts and
Gemini cachedContents. They are still authenticated, tenant-checked and recorded for usage."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.adapt import check_model_name, unknown_model, upstream_headers
from gateway.answer import Answer
from gateway.auth import authenticate
from gateway.cache.embeddings import EmbeddingsPlan
from gateway.cached_contents import CachedContentOwnership
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.handler import Gateway, read_json
from gateway.policy.aliases import resolve_alias
from gateway.providers import Provider
from gateway.request_policy import apply_policy
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
        apply_policy(ctx)  # Cache-Control, x-gateway-* bounds, the user scope
        if method in ("POST", "PATCH"):
            limit = min(gw.settings.max_body_bytes, ctx.policy.max_body_bytes if ctx.policy else 1 << 62)
            ctx.body = await read_json(request, limit)
        provider = _provider(gw, ctx, provider_name)
        ctx.scratch["method"], ctx.scratch["path"] = method, path
        if ownership is not None:
            await ownership.before(ctx)
        ctx.provider = provider.name
        ctx.upstream_base_url = provider.base_url
        query = f"?{request.url.query}" if request.url.query and method == "GET" else ""
        ctx.upstream_path = _strip_key(path + query)
        ctx.upstream_body = ctx.body
        if ctx.model and ctx.body.get("model") != ctx.model:  # an alias
            ctx.upstream_body = {**ctx.body, "model": ctx.model}
        ctx.upstream_headers = upstream_headers(ctx, provider, gw.providers)
        await gw.light_pipeline.before(ctx)
        plan = gw.embeddings.plan(ctx) if endpoint == "embeddings" and gw.embeddings is not None else None
        marks: dict[str, str] = {}
        if plan is not None:
            await gw.embeddings.lookup(plan)  # type: ignore[union-attr]
            gw.embeddings.mark(plan, marks)  # type: ignore[union-attr]
            if plan.complete:
                ctx.latency_s = ctx.ttft_s = ctx.elapsed()
                gw.done(ctx, gw.light_pipeline)
                return json_response(ctx, 200, orjson.dumps(plan.cached_body()), marks)
            ctx.upstream_body = plan.upstream_body()
        up = await open_upstream(ctx, gw.clients, gw.failover if provider.name == "vllm" else None, method)
        raw = await up.response.read()
        up.release()
        ctx.status = up.status
        if up.status < 400:
            data = _json(raw)
            if ownership is not None and data is not None:
                data = await ownership.after(ctx, data)
                raw = orjson.dumps(data)
            if plan is not None and isinstance(data, dict):
                data, raw = await _merge_embeddings(gw, plan, data, raw)
            usage = data.get("usage") if isinstance(data, dict) else None
            if isinstance(usage, dict):
                ctx.answer = Answer(text="", model=ctx.model, provider=provider.name, usage_raw=usage)
                ctx.answered_by = "upstream"
        if plan is None:
            ctx.cache_status = "bypass"
        ctx.latency_s = ctx.ttft_s = ctx.elapsed()
        gw.done(ctx, gw.light_pipeline)
        return json_response(ctx, up.status, raw, {**up.headers, **marks})
    except GatewayError as exc:
        if not ctx.record.get("embeddings_cache"):
            ctx.cache_status = "bypass"
        response = error_response(ctx, exc)
        gw.done(ctx, gw.light_pipeline)
        return response


def _provider(gw: Gateway, ctx: RequestContext, name: str | None) -> Provider:
    model = ctx.body.get("model")
    if model is not None and not isinstance(model, str):
        raise GatewayError(400, "`model` must be a string.")
    if model:  # checked on every endpoint: it reaches the upstream (and, for some, its URL)
        model = ctx.model = resolve_alias(ctx, check_model_name(model))
    if name is not None:
        provider = gw.providers.get(name)
        assert provider is not None
        return provider
    if not model:
        raise GatewayError(400, "The request has no `model`.")
    provider = gw.providers.for_model(model, ctx.adapter.vendor)
    if provider is None:
        raise unknown_model(model)
    return provider


async def _merge_embeddings(gw: Gateway, plan: EmbeddingsPlan, data: dict[str, Any], raw: bytes) -> tuple[Any, bytes]:
    """The upstream's vectors for the missing inputs with the stored ones; the new ones stored."""
    try:
        merged, fresh = plan.merge(data)
    except ValueError as exc:  # relayed as the upstream sent it, nothing stored
        ctx = plan.ctx
        ctx.record["embeddings_cache"]["error"] = str(exc)
        return data, raw
    await gw.embeddings.store_new(plan, fresh)  # type: ignore[union-attr]
    return merged, orjson.dumps(merged) if plan.found else raw


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
