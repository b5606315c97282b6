"""The ASGI application: every endpoint of the contract, wired to the request path.

`create_app(settings)` builds the whole gateway (policies, store, layers, upstream clients,
vLLM pool) and returns a FastAPI app whose lifespan starts and stops them. Endpoint functions are
thin: they name the protocol and hand the request to `Gateway.handle`, `.forward` or `.list_models`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from gateway.adapt import path_safe_model
from gateway.admin import admin_router
from gateway.assembly import Components, build_components
from gateway.config import Settings
from gateway.errors import GatewayError, vendor_error_body
from gateway.metrics import REGISTRY
from gateway.model_lists import ModelLists
from gateway.platform_routes import platform_router
from gateway.vendors.registry import error_shape_of_path

log = logging.getLogger("gateway")
access_log = logging.getLogger("gateway.access")
_GEMINI_VERSIONS = ("v1", "v1beta")
_LOGGED_PATH_CHARS = 200  # a caller picks the path: its log line stays bounded


def create_app(settings: Settings | None = None, components: Components | None = None) -> FastAPI:
    settings = settings or Settings.load()
    parts = components or build_components(settings)
    gw = parts.gateway

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await parts.start()
        try:
            yield
        finally:
            await parts.stop()

    app = GatewayApp(title="llm-cache-gateway", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.components = parts

    # ---- OpenAI ----
    @app.post("/v1/chat/completions", tags=["openai"], openapi_extra=_body("OpenAI Chat Completions request"))
    async def chat_completions(request: Request) -> Response:
        return await gw.handle(request, "openai_chat", "chat")

    @app.post("/v1/responses", tags=["openai"], openapi_extra=_body("OpenAI Responses request"))
    async def responses(request: Request) -> Response:
        return await gw.handle(request, "openai_responses", "responses")

    @app.post("/v1/embeddings", tags=["openai"], openapi_extra=_body("OpenAI embeddings request"))
    async def embeddings(request: Request) -> Response:
        return await gw.forward(request, "openai_chat", "embeddings", "/embeddings")

    lists = ModelLists(gw, parts.pool.models if parts.pool is not None else None)

    @app.get("/v1/models", tags=["openai"])
    async def models(request: Request) -> Response:
        if _gemini_key(request):  # google-genai 3.x lists models under v1
            return await lists.gemini(request, "v1")
        return await lists.openai_list(request)

    @app.get("/{version}/models", tags=["gemini"])
    async def gemini_models(request: Request, version: str) -> Response:
        if version not in _GEMINI_VERSIONS:
            return _not_found("gemini", request)
        return await lists.gemini(request, version)

    @app.get("/{version}/models/{name}", tags=["openai", "gemini"])
    async def model_info(request: Request, version: str, name: str) -> Response:
        if version == "v1" and not _gemini_key(request):
            return await lists.openai_model(request, name)
        if version not in _GEMINI_VERSIONS:
            return _not_found("gemini", request)
        return await lists.gemini(request, version, name)

    # ---- Anthropic ----
    @app.post("/v1/messages", tags=["anthropic"], openapi_extra=_body("Anthropic Messages request"))
    async def messages(request: Request) -> Response:
        return await gw.handle(request, "anthropic_messages", "messages")

    @app.post("/v1/messages/count_tokens", tags=["anthropic"], openapi_extra=_body("Anthropic count_tokens request"))
    async def count_tokens(request: Request) -> Response:
        return await gw.forward(request, "anthropic_messages", "count_tokens", "/v1/messages/count_tokens",
                             provider_name="anthropic")

    # ---- Gemini (google-genai 3.x defaults to v1, older SDKs and the docs use v1beta) ----
    @app.post("/{version}/models/{target}", tags=["gemini"], openapi_extra=_body("Gemini generateContent request"))
    async def gemini_generate(request: Request, version: str, target: str) -> Response:
        model, _, action = target.partition(":")
        if version not in _GEMINI_VERSIONS or action not in ("generateContent", "streamGenerateContent", "countTokens"):
            return _not_found("gemini", request)
        if not path_safe_model(model.removeprefix("models/")):  # it goes into the upstream path as it is
            return _error("gemini", 400, f"`{model[:100]}` is not a valid Gemini model name.")
        if action == "countTokens":
            return await gw.forward(request, "gemini", "count_tokens", f"/{version}/models/{target}",
                                 provider_name="gemini")
        return await gw.handle(request, "gemini", "generate", path_model=model,
                               path_stream=action == "streamGenerateContent", api_version=version)

    # LiteLLM's gemini/ route with an api_base appends `models/{model}:{method}` to it as it is, so an
    # api_base of the gateway's bare URL arrives without a version: served as v1beta, the version
    # LiteLLM itself calls Gemini with.
    @app.post("/models/{target}", tags=["gemini"], openapi_extra=_body("Gemini generateContent request"))
    async def gemini_generate_unversioned(request: Request, target: str) -> Response:
        return await gemini_generate(request, "v1beta", target)

    async def cached_contents(request: Request, version: str) -> Response:
        if version not in _GEMINI_VERSIONS:
            return _not_found("gemini", request)
        return await gw.forward(request, "gemini", "cached_contents", f"/{version}/cachedContents",
                             provider_name="gemini", method=request.method, owned=True)

    async def cached_content(request: Request, version: str, name: str) -> Response:
        if version not in _GEMINI_VERSIONS:
            return _not_found("gemini", request)
        return await gw.forward(request, "gemini", "cached_contents", f"/{version}/cachedContents/{name}",
                             provider_name="gemini", method=request.method, owned=True)

    # One route per method: OpenAPI needs one operation (and operation id) for each.
    for method in ("GET", "POST"):
        app.add_api_route("/{version}/cachedContents", cached_contents, methods=[method], tags=["gemini"],
                          name=f"cached_contents_{method.lower()}")
    for method in ("GET", "PATCH", "DELETE"):
        app.add_api_route("/{version}/cachedContents/{name}", cached_content, methods=[method], tags=["gemini"],
                          name=f"cached_content_{method.lower()}")

    # ---- health and metrics ----
    @app.get("/healthz", tags=["ops"])
    async def healthz() -> Response:
        return PlainTextResponse("ok")

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> Response:
        # Ready once policies are loaded and the layers tenants use at start-up have loaded; never
        # dependent on cache health (the caches fail open). The body says each layer's state.
        states = "".join(f"{name}: {state}\n" for name, state in parts.layer_states().items())
        if parts.ready:
            return PlainTextResponse("ready\n" + states)
        head = "loading" if parts.started else "policies not loaded"
        return PlainTextResponse(f"{head}\n{states}", status_code=503)

    @app.get("/metrics", tags=["ops"])
    async def metrics() -> Response:
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    app.fast_routes = {
        ("POST", "/v1/chat/completions"): chat_completions,
        ("POST", "/v1/responses"): responses,
        ("POST", "/v1/messages"): messages,
    }
    app.include_router(platform_router(gw))
    app.include_router(admin_router(parts))
    for router in parts.extra_routers:
        app.include_router(router)

    @app.exception_handler(GatewayError)
    async def gateway_error(request: Request, exc: GatewayError) -> Response:
        return _error(_vendor_of(request), exc.status, exc.message, exc.code)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        # An admin body FastAPI validated: the usual error object, not FastAPI's {"detail": [...]}.
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        return _error(_vendor_of(request), 400, f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(404)
    async def not_found(request: Request, exc: Exception) -> Response:
        return _not_found(_vendor_of(request), request)

    @app.exception_handler(405)
    async def not_allowed(request: Request, exc: Exception) -> Response:
        _log_unrouted(request, 405)
        return _error(_vendor_of(request), 405, f"Method {request.method} is not allowed on {request.url.path}.")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        # A bug of ours: answer in the caller's shape, never with a traceback.
        log.error("unhandled error", exc_info=exc, extra={"path": request.url.path})
        return _error(_vendor_of(request), 500, "The gateway failed to handle this request.", "internal_error")

    return app


class GatewayApp(FastAPI):
    """FastAPI, plus a direct path for the generation endpoints.

    Those endpoints take the raw request and answer in their own error shapes, so FastAPI's
    routing, dependency solving and middleware stack add nothing to them but CPU time (about a
    fifth of the proxy's own per-request cost, measured with py-spy). They are still declared as
    FastAPI routes — the OpenAPI schema and any other path go through FastAPI as usual."""

    fast_routes: dict[tuple[str, str], Callable[[Request], Awaitable[Response]]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            handler = self.fast_routes.get((scope["method"], scope["path"]))
            if handler is not None:
                request = Request(scope, receive)
                try:
                    response = await handler(request)
                except Exception:
                    log.exception("unhandled error", extra={"path": scope["path"]})
                    response = _error(_vendor_of(request), 500, "The gateway failed to handle this request.",
                                      "internal_error")
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _body(description: str) -> dict[str, Any]:
    return {"requestBody": {"required": True, "description": description,
                            "content": {"application/json": {"schema": {"type": "object"}}}}}


def _gemini_key(request: Request) -> bool:
    return "x-goog-api-key" in request.headers or "key" in request.query_params


def _vendor_of(request: Request) -> str:
    """Whose error shape a request gets when no endpoint of the gateway took it: by the headers its SDK
    always sends (`anthropic-version`; Gemini's key header or `?key=`), else by its path."""
    if "anthropic-version" in request.headers:
        return "anthropic"
    if _gemini_key(request) or "x-goog-api-client" in request.headers:
        return "gemini"
    return error_shape_of_path(request.url.path)


def _error(vendor: str, status: int, message: str, code: str | None = None) -> Response:
    return Response(orjson.dumps(vendor_error_body(vendor, status, message, code)), status_code=status,
                    media_type="application/json")


def _not_found(vendor: str, request: Request) -> Response:
    _log_unrouted(request, 404)
    # `code` is OpenAI's own field; Anthropic's and Gemini's shapes take their word for 404 from the status
    return _error(vendor, 404, f"No such endpoint: {request.url.path[:_LOGGED_PATH_CHARS]}.",
                  "not_found" if vendor == "openai" else None)


def _log_unrouted(request: Request, status: int) -> None:
    """A request no endpoint serves still gets its access-log line (a client pointed at a wrong base URL
    shows up there, not only in its own error). The query is left out: it can carry a key."""
    if access_log.isEnabledFor(logging.INFO):
        access_log.info("request", extra={"method": request.method, "path": request.url.path[:_LOGGED_PATH_CHARS],
                                          "status": status, "error": "no such endpoint" if status == 404
                                          else "method not allowed"})


def app_from_env() -> FastAPI:
    """Factory for `uvicorn --factory` (multi-worker serve): settings from the environment. Each
    worker is a process of its own: it sets up the JSON log lines itself."""
    import os

    from gateway import logs

    logs.configure(os.environ.get("GATEWAY_LOG_LEVEL", "info"))
    return create_app(Settings.load(os.environ.get("GATEWAY_CONFIG")))
