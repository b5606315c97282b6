"""The admin API (`Authorization: Bearer $GATEWAY_ADMIN_KEY`): policy reload and cache purge.
Usage endpoints come from the usage layer's router."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from gateway.admin_tenants import tenants_view
from gateway.auth import check_admin
from gateway.config import Settings
from gateway.errors import GatewayError
from gateway.stores.base import StoreUnavailable

if TYPE_CHECKING:
    from gateway.assembly import Components


class ORJSONResponse(Response):
    """JSON through orjson (FastAPI's own ORJSONResponse is deprecated and warns on every call)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class PurgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant: str
    layer: str | None = None  # response | semantic | provider; None = every layer
    version: str | None = None  # semantic cache: only entries of this knowledge version


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    request_id: str = Field(min_length=1, max_length=200)
    correct: bool


def admin_dependency(settings: Settings) -> Callable[[Request], None]:
    """The FastAPI dependency every admin route uses (raises GatewayError on a missing/bad key)."""

    def require_admin(request: Request) -> None:
        key = settings.admin_key
        check_admin(request.headers, key.get_secret_value() if key else None)

    return require_admin


def admin_router(parts: Components) -> APIRouter:
    router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(admin_dependency(parts.settings))])

    @router.post("/policies/reload")
    async def reload_policies() -> ORJSONResponse:
        result = await parts.registry.areload()
        return ORJSONResponse(result.to_dict(), status_code=200 if result.ok else 422)

    @router.get("/tenants")
    async def tenants(tenant: str | None = None) -> ORJSONResponse:
        """Every tenant (or `?tenant=T`) with its effective policy; 404 for an unknown tenant."""
        view = tenants_view(parts.registry.current, tenant)
        if tenant and not view["tenants"]:
            raise GatewayError(404, f"no tenant named {tenant[:128]!r}")
        return ORJSONResponse(view)

    @router.post("/cache/purge")
    async def purge(req: PurgeRequest) -> ORJSONResponse:
        layers = [req.layer] if req.layer else list(parts.purgers)
        unknown = [name for name in layers if name not in parts.purgers]
        if unknown:
            return ORJSONResponse({"error": {"message": f"unknown layer {unknown[0]!r}; one of {list(parts.purgers)}",
                                             "type": "invalid_request_error"}}, status_code=400)
        removed: dict[str, Any] = {}
        try:
            for name in layers:
                removed[name] = await parts.purgers[name](req.tenant, req.version)
        except ValueError as exc:
            raise GatewayError(400, str(exc)) from exc
        except StoreUnavailable as exc:
            raise GatewayError(503, f"The store is unavailable; nothing more was purged ({removed}).") from exc
        return ORJSONResponse({"tenant": req.tenant, "removed": removed})

    @router.post("/cache/feedback")
    async def feedback(req: FeedbackRequest) -> ORJSONResponse:
        """The application's word on a semantic hit (by the response's x-gateway-request-id): evidence
        for the semantic layer; a wrong hit also drops the entry that answered it."""
        stage = parts.pipeline.stage("semantic_cache")
        handler = getattr(stage, "feedback", None)
        if handler is None:
            raise GatewayError(404, "the semantic cache is not enabled on this gateway")
        result = await handler(req.request_id, req.correct)
        if result is None:
            raise GatewayError(404, "no semantic hit is known for this request id (or it is too old)")
        return ORJSONResponse(result)

    return router
