"""The Azure OpenAI emulator: OpenAI's chat, embeddings and Responses behind Azure's paths, auth and annotations.

    POST /openai/deployments/{deployment}/chat/completions?api-version=V    (AzureOpenAI SDK, REST)
    POST /openai/deployments/{deployment}/embeddings?api-version=V
    POST /openai/responses?api-version=V                                   (model = deployment name)
    POST /openai/v1/chat/completions | /openai/v1/embeddings | /openai/v1/responses  (v1 API, model = deployment)

Auth: `api-key: <key>` or `Authorization: Bearer <Microsoft Entra token>` (tokens listed in `AzureConfig`).
A deployment names a model; requests to an unknown deployment are 404 DeploymentNotFound. Prompt caching is
OpenAI's classic rule (1,024 tokens, 128-token steps, `prompt_tokens_details.cached_tokens`), kept apart from the
OpenAI emulator's caches and per key (caches "aren't shared between Azure subscriptions"). Responses carry the
content-filter annotations: `prompt_filter_results` and per-choice `content_filter_results`; a stream opens with
the prompt-annotation chunk (`choices: []`, empty id and model) and closes with a completion annotation.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.requests import Request

from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.openai_app import OpenAIEmulator
from gateway_dev.emulators.openai_responses import ResponsesEndpoint
from gateway_dev.emulators.web import Call, EmulatorError, EmulatorResponse, EmulatorState, bearer, begin, sse_data

# Dated versions from the inference API's lifecycle page (GA and preview); the v1 API takes none, or "preview".
API_VERSIONS = frozenset({
    "2022-12-01", "2023-05-15", "2024-02-01", "2024-06-01", "2024-10-21",
    "2024-08-01-preview", "2024-09-01-preview", "2024-10-01-preview", "2024-12-01-preview", "2025-01-01-preview",
    "2025-02-01-preview", "2025-03-01-preview", "2025-04-01-preview",
})
V1_API_VERSIONS = frozenset({"preview", "latest", "v1"})
_NO_KEY = ("Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key "
           "for an active subscription and use a correct regional API endpoint for your resource.")
_BAD_TOKEN = ("Unauthorized. Access token is missing, invalid, audience is incorrect "
              "(https://cognitiveservices.azure.com), or has expired.")
_SAFE = {"filtered": False, "severity": "safe"}
_PROMPT_RESULTS = {"hate": _SAFE, "jailbreak": {"filtered": False, "detected": False}, "self_harm": _SAFE,
                   "sexual": _SAFE, "violence": _SAFE}
_CHOICE_RESULTS = {"hate": _SAFE, "self_harm": _SAFE, "sexual": _SAFE, "violence": _SAFE}
_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}(-preview)?$")


@dataclass
class AzureConfig:
    """The emulated resource: its deployments (name -> model), accepted keys (None: any non-empty key, or the set's
    `valid_keys`), and Microsoft Entra tokens it accepts as `Authorization: Bearer`."""

    deployments: dict[str, str] = field(default_factory=lambda: {
        "gpt-4o": "gpt-4o", "gpt-4o-mini": "gpt-4o-mini", "gpt-4.1": "gpt-4.1", "gpt-4.1-mini": "gpt-4.1-mini",
        "gpt-5-mini": "gpt-5-mini", "o4-mini": "o4-mini", "text-embedding-3-small": "text-embedding-3-small",
        "text-embedding-3-large": "text-embedding-3-large"})
    api_keys: set[str] | None = None
    entra_tokens: set[str] = field(default_factory=set)


def _err(status: int, message: str, code: str | None = None) -> EmulatorError:
    # Azure's errorResponse is {"error": {code, message, param, type, inner_error}}: OpenAI's shape with string codes.
    return EmulatorError("openai", status, message, code=code or str(status), type=None)


class _AzureBackend(OpenAIEmulator):
    """The OpenAI emulator's endpoints, counted as `azure.*`, authenticated and resolved the Azure way."""

    vendor = "azure"

    def __init__(self, state: EmulatorState, faults: FaultController, config: AzureConfig) -> None:
        # Azure documents only the in-memory lifetime ("cleared within 5-10 minutes of inactivity"): take it where
        # OpenAI would default a model to 24h.
        super().__init__(state, faults, zdr=True)
        self.config = config

    def _valid_key(self, key: str) -> bool:
        keys = self.config.api_keys if self.config.api_keys is not None else self.state.valid_keys
        return bool(key) and (keys is None or key in keys)

    def key_of(self, request: Request) -> str:
        key = request.headers.get("api-key")
        if key is not None:
            if not self._valid_key(key):
                raise _err(401, _NO_KEY)
            return key
        token = bearer(request)
        if token is not None:
            if token in self.config.entra_tokens:
                return "entra:" + token
            # The v1 API takes the key the way the plain OpenAI client sends it, as a bearer token.
            if request.url.path.startswith("/openai/v1/") and self._valid_key(token):
                return token
            raise _err(401, _BAD_TOKEN)
        raise _err(401, _NO_KEY)

    async def begin(self, request: Request, endpoint: str, *, json_body: bool = True) -> Call:
        call = await begin(request, self.state, self.faults, emulator="azure", endpoint=f"azure.{endpoint}",
                           vendor="openai", key_of=self.key_of, json_body=json_body)
        _check_api_version(request)
        if json_body and isinstance(call.body, dict):
            deployment = request.path_params.get("deployment") or call.body.get("model")
            if not isinstance(deployment, str) or not deployment:
                raise _err(400, "you must provide a model parameter", "BadRequest")
            model = self.config.deployments.get(deployment)
            if model is None:
                raise _err(404, "The API deployment for this resource does not exist. If you created the deployment "
                           "within the last 5 minutes, please wait a moment and try again.", "DeploymentNotFound")
            call.body["model"] = model
        return call


def _check_api_version(request: Request) -> None:
    version = request.query_params.get("api-version")
    if request.url.path.startswith("/openai/v1/"):
        if version is not None and version not in V1_API_VERSIONS:
            raise _err(400, "API version not supported", "BadRequest")
        return
    if version is None:
        raise _err(404, "Resource not found")
    if not _DATED.match(version) or version not in API_VERSIONS:
        raise _err(400, "API version not supported", "BadRequest")


class AzureOpenAIEmulator:
    vendor = "azure"

    def __init__(self, state: EmulatorState, faults: FaultController, config: AzureConfig | None = None) -> None:
        self.config = config or AzureConfig()
        self.backend = _AzureBackend(state, faults, self.config)
        self.responses_endpoint = ResponsesEndpoint(self.backend)

    @property
    def cache(self) -> Any:
        return self.backend.cache

    async def chat(self, request: Request) -> EmulatorResponse:
        return annotate(await self.backend.chat(request))

    async def embeddings(self, request: Request) -> EmulatorResponse:
        return await self.backend.embeddings(request)

    async def responses(self, request: Request) -> EmulatorResponse:
        return await self.responses_endpoint.create(request)


def annotate(response: EmulatorResponse) -> EmulatorResponse:
    """Add Azure's content-filter annotations to a chat completion (a JSON body or a stream)."""
    if response.chunks is not None:
        response.chunks = _annotated_stream(response.chunks)
        return response
    if response.status == 200 and response.body:
        body = orjson.loads(response.body)
        body["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": _PROMPT_RESULTS}]
        for choice in body.get("choices") or []:
            choice["content_filter_results"] = _CHOICE_RESULTS
        response.body = orjson.dumps(body)
    return response


def _annotation(choices: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": "", "object": "", "created": 0, "model": ""}
    if choices is None:
        out["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": _PROMPT_RESULTS}]
        out["choices"] = []
    else:
        out["choices"] = choices
    out["usage"] = None
    return out


async def _annotated_stream(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The prompt annotation first, the model's chunks, then one completion annotation per choice once the model
    finished (before the usage chunk and `[DONE]`), as the async-filter stream does."""
    first = True
    finished: list[int] = []
    text_len = 0
    try:
        async for chunk in chunks:
            if first:
                first = False
                if chunk.startswith(b"data: {"):
                    yield sse_data(_annotation())
            if not chunk.startswith(b"data: {"):  # [DONE]
                if finished:
                    yield sse_data(_annotation(_closing(finished, text_len)))
                    finished = []
                yield chunk
                continue
            obj = orjson.loads(chunk[6:])
            choices = obj.get("choices")
            if choices == [] and finished:  # the usage chunk
                yield sse_data(_annotation(_closing(finished, text_len)))
                finished = []
            for c in choices or []:
                text_len += len(((c.get("delta") or {}).get("content")) or "")
                if c.get("finish_reason"):
                    finished.append(int(c.get("index") or 0))
            yield chunk
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def _closing(indexes: list[int], text_len: int) -> list[dict[str, Any]]:
    offsets = {"check_offset": text_len, "start_offset": 0, "end_offset": text_len}
    return [{"index": i, "finish_reason": None, "content_filter_results": _CHOICE_RESULTS,
             "content_filter_offsets": offsets} for i in indexes]
