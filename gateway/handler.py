"""The request path, top to bottom.

    authenticate → policy → protocol adapter → [stages: usage → response cache → semantic cache →
    rewrite → prefix explainer → provider cache → route] → upstream → [stages settle what they left
    running beside the upstream call] → respond → [stages' after(), in reverse]

Each step is its own module; this file only strings them together and turns a `GatewayError`
into the caller's vendor error shape. `Gateway` owns the three entry points — `handle` (the cached
request path), `forward` (pass-through endpoints: embeddings, token counts, cachedContents) and
`list_models` — and everything a request leaves behind it: post-stages in the background and upstream
streams read on for single-flight followers.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.adapt import adapt, upstream_headers
from gateway.answer import Answer
from gateway.auth import authenticate
from gateway.cache.embeddings import EmbeddingsCache, merge_embeddings
from gateway.cache.stale import StaleFallback, fallback
from gateway.cached_contents import CachedContentOwnership
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.passthrough import add_models, check_body_model, named_provider, parse_json, provider_of_body, strip_key
from gateway.pipeline import EventHook, Pipeline
from gateway.policy.registry import PolicyRegistry
from gateway.protocols import get_adapter
from gateway.providers import ProviderTable
from gateway.request_policy import apply_policy
from gateway.respond import error_response, json_response, respond_hit, respond_upstream
from gateway.upstream.call import ErrorHook, Failover, open_upstream
from gateway.upstream.client import UpstreamClients

log = logging.getLogger("gateway.access")
MAX_JSON_DEPTH = 254  # the deepest body orjson can serialize again for the upstream


def new_request_id() -> str:
    # Unique, not secret: a PRNG draw is ~20x cheaper than os.urandom's syscall on the hot path.
    return f"gw-{random.getrandbits(96):024x}"


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request body as a JSON object; 413 over `limit` bytes, 400 when it is not a JSON object."""
    return parse_body(await read_raw(request, limit))


async def read_raw(request: Request, limit: int) -> bytes:
    """The request body's bytes; 413 over `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise GatewayError(413, f"The request body is larger than the limit of {limit} bytes.")
    return await _receive_body(request, limit)


def parse_body(raw: bytes) -> dict[str, Any]:
    """`raw` as a JSON object; 400 when it is not one."""
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


async def _receive_body(request: Request, limit: int) -> bytes:
    # The ASGI messages read directly: Starlette's `stream()` generator costs more than the read
    # itself for the one-message bodies most requests are.
    chunks: list[bytes] = []
    size = 0
    receive = request.receive
    while True:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect
            raise GatewayError(400, "The client closed the connection before sending the whole body.")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise GatewayError(413, f"The request body is larger than the limit of {limit} bytes.")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


RequestCheck = Callable[[RequestContext], Awaitable[None]]


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
        # the stages that declare themselves light: usage recording and routing.
        self.light_pipeline = pipeline.light()
        self._background: set[asyncio.Task[None]] = set()
        self._reading: set[asyncio.Task[None]] = set()  # upstream streams read on for followers
        self.on_done: list[Callable[[RequestContext], None]] = []
        # Checks of a resolved request before the layers (the tenant's ownership of a named vendor cache)
        self.request_checks: list[RequestCheck] = []
        self.ownership: CachedContentOwnership | None = None
        self.pool_models: Callable[[], Iterable[str]] | None = None  # the vLLM pool's names, when there is one
        # The stages that repair a request the upstream refused (a vendor cache that vanished).
        self.error_hook: ErrorHook | None = pipeline if pipeline.repairs else None
        self.embeddings: EmbeddingsCache | None = None  # per-input cache of POST /v1/embeddings
        # The response cache answers from an expired entry when the vendor fails (stale-if-error).
        stale = pipeline.stage("response_cache")
        self.stale: StaleFallback | None = stale if hasattr(stale, "stale_answer") else None  # type: ignore[assignment]

    def new_context(self, request: Request, protocol: str, endpoint: str = "") -> RequestContext:
        return RequestContext(
            request_id=new_request_id(),
            adapter=get_adapter(protocol),
            headers={k.decode("latin-1"): v.decode("latin-1") for k, v in request.scope["headers"]},
            query=dict(request.query_params) if request.scope.get("query_string") else {},
            body={},
            endpoint=endpoint,
        )

    async def _read_body(self, ctx: RequestContext, request: Request) -> None:
        limit = min(self.settings.max_body_bytes, ctx.policy.max_body_bytes if ctx.policy else 1 << 62)
        ctx.raw_body = await read_raw(request, limit)
        ctx.body = parse_body(ctx.raw_body)

    # ---- the cached request path ---------------------------------------------------------------------
    async def handle(self, request: Request, protocol: str, endpoint: str, path_model: str | None = None,
                     path_stream: bool = False, api_version: str | None = None,
                     path_params: dict[str, str] | None = None) -> Response:
        ctx = self.new_context(request, protocol, endpoint)
        ctx.path_model, ctx.path_stream = path_model, path_stream
        ctx.path_params = path_params or {}
        ctx.api_version = api_version or None
        try:
            authenticate(ctx, self.registry)
            await self._read_body(ctx, request)
            apply_policy(ctx)
            adapt(ctx, self.providers)
            for check in self.request_checks:
                await check(ctx)
            hit = await self.pipeline.before(ctx)
            if hit is not None:
                return respond_hit(ctx, hit, self)
            self.pipeline.beside(ctx)
            try:
                upstream = await open_upstream(ctx, self.clients, self.failover, error_hook=self.error_hook)
            except GatewayError as exc:
                if (stale := await fallback(self.stale, ctx, exc.status)) is None:
                    raise
                await self.pipeline.settle(ctx)
                return respond_hit(ctx, stale, self)
            # The upstream's first bytes are in: what the stages left running beside the call (the prefix
            # check behind x-gateway-prefix-break) is finished before any header goes out.
            await self.pipeline.settle(ctx)
            if upstream.status >= 400 and (stale := await fallback(self.stale, ctx, upstream.status)) is not None:
                upstream.release()
                return respond_hit(ctx, stale, self)
            return await respond_upstream(ctx, upstream, self)
        except GatewayError as exc:
            await self.pipeline.settle(ctx)
            response = error_response(ctx, exc)
            self.done(ctx)
            return response

    # ---- pass-through endpoints: authenticated and recorded, not cached --------------------------------
    async def forward(self, request: Request, protocol: str, endpoint: str, path: str,
                      provider_name: str | None = None, method: str = "POST", owned: bool = False) -> Response:
        """Authenticate, forward `method path` to the provider (by name, or by the body's model) and relay.
        `owned`: the path names the tenant's vendor caches (Gemini cachedContents), checked and recorded."""
        ctx = self.new_context(request, protocol, endpoint)
        ownership = self.ownership if owned else None
        try:
            authenticate(ctx, self.registry)
            apply_policy(ctx)  # Cache-Control, x-gateway-* bounds, the user scope
            if method in ("POST", "PATCH"):
                await self._read_body(ctx, request)
            if provider_name is not None:
                check_body_model(ctx)
                provider = named_provider(self.providers, provider_name)
            else:
                provider = provider_of_body(self.providers, ctx)
            ctx.method, ctx.native_path = method, path
            if ownership is not None:
                await ownership.before(ctx)
            ctx.provider, ctx.vendor = provider.name, provider.spec
            ctx.upstream_base_url = provider.base_url
            query = f"?{request.url.query}" if request.url.query and method == "GET" else ""
            ctx.upstream_path = strip_key(path + query)
            ctx.upstream_body = ctx.body
            if ctx.model and ctx.body.get("model") not in (None, ctx.model):  # an alias
                ctx.upstream_body = {**ctx.body, "model": ctx.model}
            ctx.upstream_headers = upstream_headers(ctx, provider, self.providers)
            await self.light_pipeline.before(ctx)
            plan = self.embeddings.plan(ctx) if endpoint == "embeddings" and self.embeddings is not None else None
            marks: dict[str, str] = {}
            if plan is not None:
                await self.embeddings.lookup(plan)  # type: ignore[union-attr]
                self.embeddings.mark(plan, marks)  # type: ignore[union-attr]
                if plan.complete:
                    ctx.latency_s = ctx.ttft_s = ctx.elapsed()
                    self.done(ctx, self.light_pipeline)
                    return json_response(ctx, 200, orjson.dumps(plan.cached_body()), marks)
                ctx.upstream_body = plan.upstream_body()
            up = await open_upstream(ctx, self.clients, self.failover if provider.spec.pooled else None, method)
            raw = up.first + await up.response.read()
            up.release()
            ctx.status = up.status
            if up.status < 400:
                data = parse_json(raw)
                if ownership is not None and data is not None:
                    data = await ownership.after(ctx, data)
                    raw = orjson.dumps(data)
                if plan is not None and isinstance(data, dict):
                    data, raw = await merge_embeddings(self.embeddings, plan, data, raw)  # type: ignore[arg-type]
                usage = data.get("usage") if isinstance(data, dict) else None
                if isinstance(usage, dict):
                    ctx.answer = Answer(text="", model=ctx.model, provider=provider.name, usage_raw=usage)
                    ctx.answered_by = "upstream"
            if plan is None:
                ctx.cache_status = "bypass"
            ctx.latency_s = ctx.ttft_s = ctx.elapsed()
            self.done(ctx, self.light_pipeline)
            return json_response(ctx, up.status, raw, {**up.headers, **marks})
        except GatewayError as exc:
            if not ctx.record.get("embeddings_cache"):
                ctx.cache_status = "bypass"
            response = error_response(ctx, exc)
            self.done(ctx, self.light_pipeline)
            return response

    async def list_models(self, request: Request) -> Response:
        """OpenAI's model list plus the models the vLLM pool serves. When OpenAI cannot be asked
        (no key, unreachable) and a pool exists, the pool's list alone is answered."""
        ctx = self.new_context(request, "openai_chat", "models")
        try:
            authenticate(ctx, self.registry)
        except GatewayError as exc:
            return error_response(ctx, exc)
        response = await self.forward(request, "openai_chat", "models", "/models", provider_name="openai",
                                      method="GET")
        names = sorted(self.pool_models()) if self.pool_models is not None else []
        return add_models(response, names, owned_by="vllm") if names else response

    # ---- the end of a request ------------------------------------------------------------------------
    def done(self, ctx: RequestContext, pipeline: Pipeline | None = None) -> None:
        """Run the post-stages in the background (once per request) and write the access log."""
        if ctx.finished:
            return
        ctx.finished = True
        if ctx.latency_s is None:
            ctx.latency_s = ctx.elapsed()
        for hook in self.on_done:
            hook(ctx)
        if ctx.answer is None:
            self.pipeline.abandoned(ctx)
        task = asyncio.get_running_loop().create_task(self._after(ctx, pipeline or self.pipeline))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def listeners(self, ctx: RequestContext) -> list[EventHook]:
        return self.pipeline.listeners(ctx)

    def keeps_upstream(self, ctx: RequestContext) -> bool:
        return self.pipeline.keeps_upstream(ctx)

    def keep_reading(self, task: asyncio.Task[None]) -> None:
        self._reading.add(task)
        task.add_done_callback(self._reading.discard)

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
        if self._reading:
            await asyncio.wait(list(self._reading), timeout=limit_s)
        if self._background:
            await asyncio.wait(list(self._background), timeout=limit_s)
