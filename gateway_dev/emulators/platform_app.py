"""The cloud-platform emulators on one port of their own: Azure OpenAI, Vertex AI and Amazon Bedrock.

    /openai/deployments/{deployment}/chat/completions|embeddings, /openai/responses, /openai/v1/...   Azure OpenAI
    /token                                                                              Vertex OAuth token endpoint
    /{v1,v1beta1}/projects/{p}/locations/{l}/publishers/{pub}/models/{m}:{method}       Vertex AI
    /{v1,v1beta1}/projects/{p}/locations/{l}/cachedContents[/{id}]                      Vertex AI context caches
    /model/{modelId}/converse, /model/{modelId}/converse-stream                         Amazon Bedrock
    /health, /_emulator/*                                                               liveness, control

Separate from the vendor port because each platform is another host in production, and so that each answers
errors in its own shape (Bedrock's rest-json errors are nobody else's).
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
from gateway_dev.emulators.azure_app import AzureConfig, AzureOpenAIEmulator
from gateway_dev.emulators.bedrock_app import BedrockEmulator, bedrock_error_type
from gateway_dev.emulators.bedrock_auth import BedrockAuth
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.vertex_app import VertexConfig, VertexEmulator
from gateway_dev.emulators.web import EmulatorError, EmulatorResponse, EmulatorState, Guard, error_response, new_id

PLATFORMS = ("azure", "vertex", "bedrock")


class PlatformFaults:
    """`faults.azure`, `.vertex`, `.bedrock` (and `faults["azure"]`)."""

    def __init__(self) -> None:
        self.azure = FaultController()
        self.vertex = FaultController()
        self.bedrock = FaultController()

    def __getitem__(self, name: str) -> FaultController:
        if name not in PLATFORMS:
            raise KeyError(name)
        return getattr(self, name)  # type: ignore[no-any-return]

    def clear_all(self) -> None:
        for name in PLATFORMS:
            self[name].clear()


class PlatformEmulators:
    def __init__(self, state: EmulatorState, *, azure: AzureConfig | None = None, vertex: VertexConfig | None = None,
                 bedrock: BedrockAuth | None = None) -> None:
        self.state = state
        self.faults = PlatformFaults()
        self.azure = AzureOpenAIEmulator(state, self.faults.azure, azure)
        self.vertex = VertexEmulator(state, self.faults.vertex, vertex)
        self.bedrock = BedrockEmulator(state, self.faults.bedrock, bedrock)
        self.app = self._build()

    def clear_caches(self) -> None:
        self.azure.cache.clear()
        self.vertex.clear_caches()
        self.bedrock.clear_caches()

    def _build(self) -> Starlette:
        async def health(request: Request) -> Response:
            return Response(b"ok", media_type="text/plain")

        async def on_error(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, EmulatorError)
            return render_error(exc)  # type: ignore[return-value]

        async def on_http(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, HTTPException)
            vendor = platform_vendor(request.url.path)
            if vendor == "bedrock" and exc.status_code == 404:
                err = EmulatorError(vendor, 404, "The requested operation is not recognized by the service.",
                                    type="UnknownOperationException")
            else:
                msg = "Resource not found" if exc.status_code == 404 else str(exc.detail)
                err = EmulatorError(vendor, exc.status_code, msg, code=str(exc.status_code))
            return render_error(err)  # type: ignore[return-value]

        a, v, b = self.azure, self.vertex, self.bedrock
        vp = "/{version:str}/projects/{project:str}/locations/{location:str}"
        routes = [
            Route("/openai/deployments/{deployment:str}/chat/completions", a.chat, methods=["POST"]),
            Route("/openai/deployments/{deployment:str}/embeddings", a.embeddings, methods=["POST"]),
            Route("/openai/responses", a.responses, methods=["POST"]),
            Route("/openai/v1/chat/completions", a.chat, methods=["POST"]),
            Route("/openai/v1/embeddings", a.embeddings, methods=["POST"]),
            Route("/openai/v1/responses", a.responses, methods=["POST"]),
            Route("/token", v.auth.token_endpoint, methods=["POST"]),
            Route(vp + "/publishers/{publisher:str}/models/{model_call:str}", v.model_call, methods=["POST"]),
            Route(vp + "/cachedContents", v.create_cache, methods=["POST"]),
            Route(vp + "/cachedContents", v.list_caches, methods=["GET"]),
            Route(vp + "/cachedContents/{cache_id:str}", v.cache_item, methods=["GET", "PATCH", "DELETE"]),
            Route("/model/{model_id:path}/converse", b.converse, methods=["POST"]),
            Route("/model/{model_id:path}/converse-stream", b.converse_stream, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/healthz", health, methods=["GET"]),
            *admin_routes(self.state, lambda: {n: self.faults[n] for n in PLATFORMS}, on_reset=self.clear_caches),
        ]
        return Starlette(routes=routes, exception_handlers={EmulatorError: on_error, HTTPException: on_http},
                         middleware=[Middleware(Guard, vendor_of=platform_vendor)])


def platform_vendor(path: str) -> str:
    """Whose error shape a path answers in."""
    if path.startswith("/model/"):
        return "bedrock"
    if path.startswith("/openai/"):
        return "openai"
    return "gemini"


def render_error(err: EmulatorError) -> EmulatorResponse:
    if err.vendor != "bedrock":
        return error_response(err)
    kind = err.type or bedrock_error_type(err.status)
    headers = {**err.headers, "x-amzn-errortype": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
               "x-amzn-requestid": new_id("", 32)}
    return EmulatorResponse(err.status, body=orjson.dumps({"message": err.message}), headers=headers)
