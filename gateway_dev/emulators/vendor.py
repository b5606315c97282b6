"""The combined vendor app: OpenAI, DeepSeek, Anthropic and Gemini on one port.

    /v1/chat/completions, /chat/completions        OpenAI, or DeepSeek / Mistral for their models
    /v1/responses, /v1/embeddings, /v1/models       OpenAI (also without /v1, as the SDK sends with a bare base)
    /v1/messages, /v1/messages/count_tokens         Anthropic
    /{v1beta,v1}/models/{model}:generateContent...  Gemini; /{v1beta,v1}/cachedContents[/{id}]
    /health, /healthz                               liveness
    /_emulator/...                                  control (admin.py)
"""

from __future__ import annotations

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway_dev.emulators.admin import admin_routes
from gateway_dev.emulators.anthropic_app import AnthropicEmulator
from gateway_dev.emulators.deepseek import DeepSeekEmulator
from gateway_dev.emulators.faults import Faults
from gateway_dev.emulators.gemini_app import GeminiEmulator
from gateway_dev.emulators.mistral import MistralEmulator, is_mistral_model
from gateway_dev.emulators.models import is_deepseek_model
from gateway_dev.emulators.openai_app import OpenAIEmulator
from gateway_dev.emulators.openai_responses import ResponsesEndpoint
from gateway_dev.emulators.web import EmulatorError, EmulatorState, Guard, error_response


class VendorEmulators:
    """The hosted-vendor emulators sharing one state; `.app` is the ASGI app."""

    def __init__(self, state: EmulatorState, faults: Faults) -> None:
        self.state, self.faults = state, faults
        self.openai = OpenAIEmulator(state, faults.openai)
        self.responses = ResponsesEndpoint(self.openai)
        self.anthropic = AnthropicEmulator(state, faults.anthropic)
        self.gemini = GeminiEmulator(state, faults.gemini)
        self.deepseek = DeepSeekEmulator(state, faults.deepseek)
        self.mistral = MistralEmulator(state, faults.mistral)
        self.app = self._build()

    def clear_caches(self) -> None:
        self.openai.cache.clear()
        self.anthropic.cache.clear()
        self.anthropic.diagnostics.clear()
        self.responses.diagnostics.clear()
        self.gemini.caches.clear()
        self.gemini.implicit.clear()
        self.deepseek.cache.clear()
        self.mistral.cache.clear()

    async def chat(self, request: Request) -> Response:
        raw = await request.body()  # Starlette keeps it; the emulator's own handler reads it again
        try:
            model = orjson.loads(raw).get("model") if raw else None
        except (orjson.JSONDecodeError, AttributeError):
            model = None
        if isinstance(model, str) and is_deepseek_model(model):
            return await self.deepseek.chat(request)  # type: ignore[return-value]
        if isinstance(model, str) and is_mistral_model(model):
            return await self.mistral.chat(request)  # type: ignore[return-value]
        return await self.openai.chat(request)  # type: ignore[return-value]

    async def models(self, request: Request) -> Response:
        version = request.path_params.get("version", "v1")
        if "anthropic-version" in request.headers:
            return await self.anthropic.models(request)  # type: ignore[return-value]
        if _gemini_key(request) or version == "v1beta":
            return await self.gemini.list_models(request)  # type: ignore[return-value]
        return await self.openai.models(request)  # type: ignore[return-value]

    async def model_path(self, request: Request) -> Response:
        rest: str = request.path_params["rest"]
        version = request.path_params["version"]
        if ":" in rest:
            return await self.gemini.model_call(request)  # type: ignore[return-value]
        if request.method == "GET" and (_gemini_key(request) or version == "v1beta"):
            return await self.gemini.get_model(request, rest.removeprefix("models/"))  # type: ignore[return-value]
        if request.method == "GET" and version == "v1":
            request.path_params["model"] = rest
            return await self.openai.model(request)  # type: ignore[return-value]
        raise HTTPException(404)

    def _build(self) -> Starlette:
        async def health(request: Request) -> Response:
            return Response(b"ok", media_type="text/plain")

        async def on_error(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, EmulatorError)
            return error_response(exc)  # type: ignore[return-value]

        async def on_http(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, HTTPException)
            path = request.url.path
            vendor = vendor_of(path)
            msg = f"Invalid URL ({request.method} {path})" if exc.status_code == 404 else exc.detail
            return error_response(EmulatorError(vendor, exc.status_code, msg))  # type: ignore[return-value]

        o, g = self.openai, self.gemini
        routes = [
            *[Route(p, self.chat, methods=["POST"]) for p in ("/v1/chat/completions", "/chat/completions")],
            *[Route(p, self.responses.create, methods=["POST"]) for p in ("/v1/responses", "/responses")],
            *[Route(p, o.embeddings, methods=["POST"]) for p in ("/v1/embeddings", "/embeddings")],
            Route("/models", o.models, methods=["GET"]),
            Route("/v1/messages", self.anthropic.messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self.anthropic.count_tokens, methods=["POST"]),
            Route("/{version:str}/models", self.models, methods=["GET"]),
            Route("/{version:str}/models/{rest:path}", self.model_path, methods=["GET", "POST"]),
            Route("/{version:str}/cachedContents", g.create_cache, methods=["POST"]),
            Route("/{version:str}/cachedContents", g.list_caches, methods=["GET"]),
            Route("/{version:str}/cachedContents/{cache_id:str}", g.cache_item, methods=["GET", "PATCH", "DELETE"]),
            Route("/health", health, methods=["GET"]),
            Route("/healthz", health, methods=["GET"]),
            *admin_routes(self.state, lambda: {n: self.faults[n] for n in Faults.VENDORS},
                          on_reset=self.clear_caches),
        ]
        # Guard sits inside Starlette's ServerErrorMiddleware: any other exception becomes a vendor-shaped 500.
        return Starlette(routes=routes, exception_handlers={EmulatorError: on_error, HTTPException: on_http},
                         middleware=[Middleware(Guard, vendor_of=vendor_of)])


def vendor_of(path: str) -> str:
    """Whose error shape a path answers in."""
    if path.startswith("/v1/messages"):
        return "anthropic"
    if "/models/" in path or "cachedContents" in path or path.startswith("/v1beta"):
        return "gemini"
    return "openai"


def _gemini_key(request: Request) -> bool:
    return "x-goog-api-key" in request.headers or "key" in request.query_params
