"""Model lists, as each SDK asks for them.

- OpenAI `GET /v1/models`: OpenAI's list, plus the models of every other vendor the gateway serves
  through the OpenAI protocol (Anthropic's `claude-*`, Gemini's `gemini-*`, DeepSeek's) and of the
  vLLM pool. Each vendor is asked concurrently with the gateway's key for it; a vendor without a
  key, or that fails, is left out of the list rather than failing it.
- OpenAI `GET /v1/models/{id}`: that model, in OpenAI's shape; 404 in OpenAI's shape if no vendor lists it.
- Anthropic `GET /v1/models` (the request carries `anthropic-version`): Anthropic's own list.
- Gemini `GET /{v1beta,v1}/models[/{name}]`: Gemini's own answer.

Lists are metadata, not model calls: they are authenticated (the tenant's key) but are not usage
records (a `models.list()` is not a request the tenant pays for).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiohttp
import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.adapt import path_safe_model, upstream_headers
from gateway.auth import authenticate
from gateway.errors import GatewayError, vendor_error_body
from gateway.handler import Gateway
from gateway.respond import error_response, gateway_headers
from gateway.signing.base import OutgoingRequest

log = logging.getLogger("gateway.models")
_LIST_PATHS = {"openai": "/models", "deepseek": "/models", "anthropic": "/v1/models?limit=1000",
               "gemini": "/v1beta/models?pageSize=1000"}
_CACHE_S = 60.0  # vendors' lists change rarely: one fetch a minute per vendor at most


class ModelLists:
    def __init__(self, gw: Gateway, pool_models: Any = None) -> None:
        self.gw = gw
        self.pool_models = pool_models  # () -> iterable of names, or None
        self._cached: dict[str, tuple[float, list[dict[str, Any]]]] = {}

    async def openai_list(self, request: Request) -> Response:
        ctx = self.gw.new_context(request, "openai_chat")
        try:
            authenticate(ctx, self.gw.registry)
        except GatewayError as exc:
            return error_response(ctx, exc)
        if "anthropic-version" in ctx.headers:  # the Anthropic SDK's models.list() shares the path
            return await self._relay(request, "anthropic_messages", "anthropic", "/v1/models")
        data = await self._all(ctx)
        return _json(ctx, {"object": "list", "data": data})

    async def openai_model(self, request: Request, model: str) -> Response:
        ctx = self.gw.new_context(request, "openai_chat")
        try:
            authenticate(ctx, self.gw.registry)
            if "anthropic-version" in ctx.headers and path_safe_model(model):
                return await self._relay(request, "anthropic_messages", "anthropic", f"/v1/models/{model}")
            found = next((m for m in await self._all(ctx) if m["id"] == model), None)
            if found is None:
                raise GatewayError(404, f"The model `{model[:100]}` does not exist or is not served by this gateway.",
                                   "model_not_found")
        except GatewayError as exc:
            return error_response(ctx, exc)
        return _json(ctx, found)

    async def gemini(self, request: Request, version: str, name: str | None = None) -> Response:
        if name is not None and not path_safe_model(name):
            body = vendor_error_body("gemini", 400, f"`{name[:100]}` is not a valid Gemini model name.")
            return Response(orjson.dumps(body), status_code=400, media_type="application/json")
        path = f"/{version}/models" + (f"/{name}" if name else "")
        return await self._relay(request, "gemini", "gemini", path)

    # ---- internals ----------------------------------------------------------------------------
    async def _relay(self, request: Request, protocol: str, provider_name: str, path: str) -> Response:
        ctx = self.gw.new_context(request, protocol)
        try:
            authenticate(ctx, self.gw.registry)
            provider = self.gw.providers.get(provider_name)
            assert provider is not None
            query = [p for p in request.url.query.split("&") if p and not p.startswith("key=")]
            if query and "?" not in path:
                path += "?" + "&".join(query)
            status, raw = await self._get(ctx, provider_name, provider.base_url + path)
        except GatewayError as exc:
            return error_response(ctx, exc)
        ctx.status = status
        return Response(raw, status_code=status, media_type="application/json", headers=gateway_headers(ctx))

    async def _get(self, ctx: Any, provider_name: str, url: str) -> tuple[int, bytes]:
        provider = self.gw.providers.get(provider_name)
        assert provider is not None
        headers = upstream_headers(ctx, provider, self.gw.providers)  # GatewayError without a key
        headers.pop("content-type", None)
        if ctx.signer is not None:  # the credential, as the request path adds it
            outgoing = OutgoingRequest("GET", url, dict(headers), None, ctx.upstream_key)
            await ctx.signer.sign(outgoing)
            headers = outgoing.headers
        session = self.gw.clients.session(provider_name)
        try:
            async with session.get(url, headers=headers, proxy=self.gw.clients.proxy_for(url)) as response:
                return response.status, await response.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise GatewayError(502, f"The upstream ({provider_name}) is unreachable.") from exc

    async def _all(self, ctx: Any) -> list[dict[str, Any]]:
        names = ("openai", "anthropic", "gemini", "deepseek")
        lists = await asyncio.gather(*(self._vendor(ctx, n) for n in names))
        data = [m for chunk in lists for m in chunk]
        if self.pool_models is not None:
            data += [{"id": n, "object": "model", "created": 0, "owned_by": "vllm"} for n in sorted(self.pool_models())]
        seen: set[str] = set()
        return [m for m in data if not (m["id"] in seen or seen.add(m["id"]))]  # type: ignore[func-returns-value]

    async def _vendor(self, ctx: Any, name: str) -> list[dict[str, Any]]:
        byok = ctx.policy is not None and ctx.policy.upstream_keys == "passthrough"
        if not byok and self.gw.settings.vendor_key(name) is None:
            return []
        key = f"{ctx.tenant if byok else ''}:{name}"
        hit = self._cached.get(key)
        if hit is not None and time.monotonic() - hit[0] < _CACHE_S:
            return hit[1]
        provider = self.gw.providers.get(name)
        assert provider is not None
        try:
            status, raw = await self._get(ctx, name, provider.base_url + _LIST_PATHS[name])
            doc = orjson.loads(raw) if status == 200 else None
        except (GatewayError, orjson.JSONDecodeError) as exc:
            log.info("model list unavailable", extra={"provider": name, "error": str(exc)})
            return []
        models = _openai_shape(name, doc) if isinstance(doc, dict) else []
        if status == 200:
            self._cached[key] = (time.monotonic(), models)
        return models


def _openai_shape(vendor: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    items = doc.get("data") if vendor != "gemini" else doc.get("models")
    out: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if vendor in ("openai", "deepseek"):
            if isinstance(item.get("id"), str):
                out.append(item)
        elif vendor == "anthropic":
            if isinstance(item.get("id"), str):
                out.append({"id": item["id"], "object": "model", "created": 0, "owned_by": "anthropic"})
        else:
            name = item.get("name")
            if isinstance(name, str) and name.startswith("models/gemini"):
                out.append({"id": name.removeprefix("models/"), "object": "model", "created": 0, "owned_by": "google"})
    return out


def _json(ctx: Any, doc: Any) -> Response:
    return Response(orjson.dumps(doc), media_type="application/json", headers=gateway_headers(ctx))
