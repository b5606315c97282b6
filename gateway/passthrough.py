"""Helpers of the pass-through endpoints (`Gateway.forward`, `Gateway.list_models`): embeddings, model
lists, token counts and Gemini cachedContents are authenticated, tenant-checked and recorded for usage,
not cached."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from gateway.adapt import check_model_name, unknown_model
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.policy.aliases import resolve_alias
from gateway.providers import Provider, ProviderTable


def check_body_model(ctx: RequestContext) -> str | None:
    """The body's model, checked on every endpoint (it reaches the upstream, and for some its URL),
    with the tenant's alias resolved; None when the body names none."""
    model = ctx.body.get("model")
    if model is not None and not isinstance(model, str):
        raise GatewayError(400, "`model` must be a string.")
    if not model:
        return None
    ctx.model = resolve_alias(ctx, check_model_name(model))
    return ctx.model


def named_provider(providers: ProviderTable, name: str) -> Provider:
    provider = providers.get(name)
    if provider is None:
        raise GatewayError(500, f"No upstream named {name} is configured.")
    return provider


def provider_of_body(providers: ProviderTable, ctx: RequestContext) -> Provider:
    model = check_body_model(ctx)
    if not model:
        raise GatewayError(400, "The request has no `model`.")
    provider = providers.for_model(model, ctx.adapter.name)
    if provider is None:
        raise unknown_model(model)
    return provider


def strip_key(path: str) -> str:
    """Never forward the caller's `?key=` (the gateway's key goes in a header)."""
    if "?" not in path:
        return path
    base, _, query = path.partition("?")
    kept = "&".join(p for p in query.split("&") if p and not p.startswith("key="))
    return f"{base}?{kept}" if kept else base


def parse_json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def add_models(response: Response, names: list[str], owned_by: str) -> Response:
    """An OpenAI model list with `names` added (a failed upstream list counts as an empty one)."""
    data: dict[str, Any] = {"object": "list", "data": []}
    if response.status_code == 200:
        try:
            data = orjson.loads(bytes(response.body))
        except orjson.JSONDecodeError:
            pass
    data.setdefault("data", []).extend(
        {"id": name, "object": "model", "created": 0, "owned_by": owned_by} for name in names
    )
    headers = {k: v for k, v in response.headers.items() if k.startswith("x-gateway-")}
    return Response(orjson.dumps(data), media_type="application/json", headers=headers)
