"""The cloud platforms' native client surfaces, so each platform's own SDK works with only its endpoint changed
and the tenant key as its credential:

- Azure OpenAI (`openai.AzureOpenAI`, key in `api-key`): `/openai/deployments/{deployment}/chat/completions`,
  `/openai/responses`, and the v1 API `/openai/v1/chat/completions|responses` (deployment as the model);
- Vertex AI (google-genai, `vertexai=True`, `Authorization: Bearer`):
  `/{v1,v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent|:streamGenerateContent`;
- Bedrock (boto3 `bedrock-runtime` with a Bedrock API key): `/model/{modelId}/converse|converse-stream`.

Each names its model with the platform's prefix (`azure/`, `vertex_ai/`, `bedrock/`) and goes through the one
request path; upstream the gateway's own credential is used. The path's project is the client's view: upstream
the gateway's project is always used, and the path's location is kept.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from gateway.adapt import path_safe_model
from gateway.errors import vendor_error_body
from gateway.handler import Gateway

_VERTEX_VERSIONS = ("v1", "v1beta1")
_VERTEX_ACTIONS = ("generateContent", "streamGenerateContent")


def _error(vendor: str, status: int, message: str) -> Response:
    import orjson

    return Response(orjson.dumps(vendor_error_body(vendor, status, message)), status_code=status,
                    media_type="application/json")


def platform_router(gw: Gateway) -> APIRouter:
    router = APIRouter()

    # ---- Azure OpenAI ----
    @router.post("/openai/deployments/{deployment}/chat/completions", tags=["azure"])
    async def azure_chat(request: Request, deployment: str) -> Response:
        return await gw.handle(request, "openai_chat", "chat", path_model=f"azure/{deployment}",
                               path_params={"platform": "azure/"})

    @router.post("/openai/v1/chat/completions", tags=["azure"])
    async def azure_v1_chat(request: Request) -> Response:
        return await gw.handle(request, "openai_chat", "chat", path_params={"platform": "azure/"})

    @router.post("/openai/responses", tags=["azure"])
    async def azure_responses(request: Request) -> Response:
        return await gw.handle(request, "openai_responses", "responses", path_params={"platform": "azure/"})

    @router.post("/openai/v1/responses", tags=["azure"])
    async def azure_v1_responses(request: Request) -> Response:
        return await gw.handle(request, "openai_responses", "responses", path_params={"platform": "azure/"})

    # ---- Vertex AI ----
    @router.post("/{version}/projects/{project}/locations/{location}/publishers/{publisher}/models/{target}",
                 tags=["vertex"])
    async def vertex_generate(request: Request, version: str, project: str, location: str, publisher: str,
                              target: str) -> Response:
        model, _, action = target.partition(":")
        if version not in _VERTEX_VERSIONS or publisher != "google" or action not in _VERTEX_ACTIONS:
            return _error("gemini", 404, f"No such endpoint: {request.url.path[:200]}.")
        if not path_safe_model(model):
            return _error("gemini", 400, f"`{model[:100]}` is not a valid Vertex AI model name.")
        return await gw.handle(request, "gemini", "generate", path_model=f"vertex_ai/{model}",
                               path_stream=action == "streamGenerateContent", api_version=version,
                               path_params={"location": location})

    # ---- Bedrock ----
    @router.post("/model/{model_id:path}/converse", tags=["bedrock"])
    async def bedrock_converse(request: Request, model_id: str) -> Response:
        return await gw.handle(request, "bedrock_converse", "converse", path_model=f"bedrock/{model_id}")

    @router.post("/model/{model_id:path}/converse-stream", tags=["bedrock"])
    async def bedrock_converse_stream(request: Request, model_id: str) -> Response:
        return await gw.handle(request, "bedrock_converse", "converse", path_model=f"bedrock/{model_id}",
                               path_stream=True)

    return router
