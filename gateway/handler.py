"""The request path, top to bottom.

    authenticate → policy → protocol adapter → [stages: usage → response cache → semantic cache →
    rewrite → prefix explainer → provider cache → route] → upstream → respond → [stages' after(),
    in reverse]

Each step is its own module; this file only strings them together and turns a `GatewayError`
into the caller's vendor error shape.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from gateway.adapt import adapt
from gateway.auth import authenticate
from gateway.cached_contents import CachedContentOwnership
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.pipeline import UPSTREAM_FAILED, Pipeline
from gateway.policy.registry import PolicyRegistry
from gateway.protocols import get_adapter
from gateway.providers import ProviderTable
from gateway.request_policy import apply_policy
from gateway.respond import error_response, finish_background_reads, respond_hit, respond_upstream
from gateway.upstream.call import ErrorHook, Failover, open_upstream
from gateway.upstream.client import UpstreamClients

log = logging.getLogger("gateway.access")
MAX_JSON_DEPTH = 254  # the deepest body orjson can serialize again for the upstream


def new_request_id() -> str:
    # Unique, not secret: a PRNG draw is ~20x cheaper than os.urandom's syscall on the hot path.
    return f"gw-{random.getrandbits(96):024x}"


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request body as a JSON object; 413 over `limit` bytes, 400 when it is not a JSON object."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise GatewayError(413, f"The request body is larger than the limit of {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise GatewayError(413, f"The request body is larger than the limit of {limit} bytes.")
            chunks.append(chunk)
    except ClientDisconnect as exc:
        raise GatewayError(400, "The client closed the connection before sending the whole body.") from exc
    raw = b"".join(chunks)
    if not raw:
        raise GatewayError(400, "The request body is empty; a JSON object was expected.")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise GatewayError(400, f"The request body is not valid JSON: {exc.msg} (at byte {exc.pos}).") from exc
    if not isinstance(body, dict):
        raise GatewayError(400, "The request body must be a JSON object.")
    # orjson reads 1024 levels of nesting but writes at most 254: a deeper body could be read, yet
    # never forwarded (a 500 later). Only a body with that many brackets can be that deep.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH:
        try:
            orjson.dumps(body)
        except orjson.JSONEncodeError as exc:
            raise GatewayError(400, f"The request body is nested more than {MAX_JSON_DEPTH} levels deep.") from exc
    return body


class Gateway:
    def __init__(self, settings: Settings, registry: PolicyRegistry, providers: ProviderTable, pipeline: Pipeline,
                 clients: UpstreamClients, failover: Failover | None = None) -> None:
        self.settings = settings
        self.registry = registry
        self.providers = providers
        self.pipeline = pipeline
        self.clients = clients
        self.failover = failover
        # Requests that skip the caching layers (embeddings, token counts, cachedContents) still get
        # usage recording and routing: the stages of the pipeline named here.
        self.light_pipeline = Pipeline([s for s in pipeline.stages if s.name in ("usage", "route")])
        self._background: set[asyncio.Task[None]] = set()
        self.on_done: list[Callable[[RequestContext], None]] = []
        self.ownership: CachedContentOwnership | None = None
        # The provider-cache layer repairs a request whose gateway-made vendor cache vanished.
        hook = pipeline.stage("provider_cache")
        self.error_hook: ErrorHook | None = hook if hasattr(hook, "on_upstream_error") else None  # type: ignore[assignment]

    def new_context(self, request: Request, protocol: str) -> RequestContext:
        return RequestContext(
            request_id=new_request_id(),
            adapter=get_adapter(protocol),
            headers={k.decode("latin-1"): v.decode("latin-1") for k, v in request.scope["headers"]},
            query=dict(request.query_params) if request.scope.get("query_string") else {},
            body={},
        )

    async def handle(self, request: Request, protocol: str, endpoint: str, path_model: str | None = None,
                     path_stream: bool = False, api_version: str | None = None,
                     path_params: dict[str, str] | None = None) -> Response:
        ctx = self.new_context(request, protocol)
        ctx.endpoint, ctx.path_model, ctx.path_stream = endpoint, path_model, path_stream
        ctx.path_params = path_params or {}
        ctx.api_version = api_version or None
        try:
            authenticate(ctx, self.registry)
            limit = min(self.settings.max_body_bytes, ctx.policy.max_body_bytes if ctx.policy else 1 << 62)
            ctx.body = await read_json(request, limit)
            apply_policy(ctx)
            adapt(ctx, self.providers)
            if self.ownership is not None and ctx.adapter.vendor == "gemini":
                await self.ownership.check_reference(ctx)
            hit = await self.pipeline.before(ctx)
            if hit is not None:
                return respond_hit(ctx, hit, self.done)
            upstream = await open_upstream(ctx, self.clients, self.failover, error_hook=self.error_hook)
            return await respond_upstream(ctx, upstream, self.done)
        except GatewayError as exc:
            response = error_response(ctx, exc)
            self.done(ctx)
            return response

    def done(self, ctx: RequestContext, pipeline: Pipeline | None = None) -> None:
        """Run the post-stages in the background (once per request) and write the access log."""
        if ctx.scratch.get("_done"):
            return
        ctx.scratch["_done"] = True
        if ctx.latency_s is None:
            ctx.latency_s = ctx.elapsed()
        for hook in self.on_done:
            hook(ctx)
        if ctx.answer is None:
            for failed in ctx.scratch.get(UPSTREAM_FAILED) or ():
                try:
                    failed()
                except Exception as exc:  # never let a stage's hook fail the request's end
                    log.warning("upstream-failed hook raised", extra={"request_id": ctx.request_id, "error": repr(exc)})
        task = asyncio.get_running_loop().create_task(self._after(ctx, pipeline or self.pipeline))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _after(self, ctx: RequestContext, pipeline: Pipeline) -> None:
        await pipeline.after(ctx)
        if log.isEnabledFor(logging.INFO):
            log.info("request", extra={
                "request_id": ctx.request_id, "tenant": ctx.tenant, "model": ctx.model, "provider": ctx.provider,
                "status": ctx.status, "cache": ctx.cache_status, "stream": ctx.stream,
                "latency_ms": round((ctx.latency_s or 0) * 1000, 2), "error": ctx.error,
            })

    async def drain(self, limit_s: float = 30.0) -> None:
        """Wait for the post-stages still running (graceful shutdown), and first for upstream streams
        still being read for single-flight followers (their end starts post-stages too)."""
        await finish_background_reads(limit_s)
        if self._background:
            await asyncio.wait(list(self._background), timeout=limit_s)
