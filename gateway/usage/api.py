"""Admin usage routes and the dashboard.

    GET /admin/usage?tenant=T[&since=7d]            totals (the contract's fields, hits by layer)
    GET /admin/usage/records?tenant=T&limit=N       newest records, newest first
    GET /admin/usage/report?tenant=T&since=7d       the report's data (per tenant, per template, break-even)
    GET /admin/usage/breaks?tenant=T&since=7d       prefix breaks by cause and template, what fixing them saves
    GET /dashboard[?tenant=T&since=7d]              the dashboard page (admin key, see below)
    GET /dashboard/data?tenant=T&since=7d           the page's data as JSON
    GET /dashboard/assets/{dashboard.js,dashboard.css}

`/admin/*` takes `Authorization: Bearer $GATEWAY_ADMIN_KEY` (the app's admin dependency). A
browser cannot send that header when it opens a page, so `/dashboard` also accepts the key once
in the URL: `/dashboard?key=K` answers with a redirect to the same page without the key and an
HttpOnly, SameSite=Strict cookie scoped to `/dashboard` that holds an HMAC of the admin key
(not the key itself; rotating the key logs every browser out). `Authorization: Bearer` works on
the dashboard routes too. Without either, the page answers 401 with a small key form.

Before reading, each route flushes this replica's buffered records, so what a caller just sent
through this gateway is in the answer.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import urlencode

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gateway.stores.base import KVStore, StoreUnavailable
from gateway.usage import query
from gateway.usage.breaks import breaks_report
from gateway.usage.keys import template_label
from gateway.usage.report import report_data
from gateway.usage.stage import UsageStage

COOKIE = "gw_dashboard"
COOKIE_MAX_AGE = 12 * 3600
_ASSETS = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}


def _asset(name: str) -> str:
    return resources.files("gateway.dashboard").joinpath(name).read_text(encoding="utf-8")


def cookie_value(admin_key: str) -> str:
    return hmac.new(admin_key.encode(), b"llm-cache-gateway dashboard v1", hashlib.sha256).hexdigest()


def _bearer(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else None


def _json(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


def _unavailable(exc: StoreUnavailable) -> Response:
    return _json({"error": {"message": f"The usage store is unavailable: {exc}", "type": "server_error"}}, 503)


def usage_router(get_store: Callable[[], KVStore], admin_auth: Callable[..., Any], *,
                 admin_key: Callable[[], str | None],
                 stage: Callable[[], UsageStage | None] | None = None) -> APIRouter:
    """The routes above. `admin_auth` is the app's `/admin` dependency (raises on a bad key);
    `admin_key` returns the configured key (None: the dashboard refuses everyone, like /admin)."""
    router = APIRouter(tags=["usage"])

    async def fresh() -> KVStore:
        usage = stage() if stage is not None else None
        if usage is not None:
            await usage.recorder.flush()
        return get_store()

    def dashboard_allowed(request: Request) -> bool:
        key = admin_key()
        if not key:
            return False
        presented = _bearer(request)
        if presented is not None and hmac.compare_digest(presented.encode(), key.encode()):
            return True
        cookie = request.cookies.get(COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.encode(), cookie_value(key).encode())

    async def guarded(request: Request, make: Callable[[KVStore], Awaitable[Any]]) -> Response:
        try:
            return _json(await make(await fresh()))
        except StoreUnavailable as exc:
            return _unavailable(exc)
        except ValueError as exc:  # a bad `since`
            return _json({"error": {"message": str(exc), "type": "invalid_request_error"}}, 400)

    # ---- admin API ------------------------------------------------------------------------------
    @router.get("/admin/usage", dependencies=[Depends(admin_auth)])
    async def usage_totals(request: Request, tenant: str | None = None, since: str | None = None) -> Response:
        return await guarded(request, lambda store: query.totals(store, tenant, since))

    @router.get("/admin/usage/records", dependencies=[Depends(admin_auth)])
    async def usage_records(request: Request, tenant: str | None = None,
                            limit: int = Query(100, ge=1, le=10_000)) -> Response:
        return await guarded(request, lambda store: query.records(store, tenant, limit))

    @router.get("/admin/usage/report", dependencies=[Depends(admin_auth)])
    async def usage_report(request: Request, tenant: str | None = None, since: str = "7d") -> Response:
        usage = stage() if stage is not None else None
        prices = usage.prices if usage is not None else None
        return await guarded(request, lambda store: report_data(store, tenant, since, prices))

    @router.get("/admin/usage/breaks", dependencies=[Depends(admin_auth)])
    async def usage_breaks(request: Request, tenant: str | None = None, since: str = "7d") -> Response:
        return await guarded(request, lambda store: breaks_report(store, tenant, since))

    # ---- dashboard ------------------------------------------------------------------------------
    @router.get("/dashboard", include_in_schema=False)
    async def dashboard(request: Request, tenant: str | None = None, since: str = "7d",
                        key: str | None = None) -> Response:
        configured = admin_key()
        if key is not None:
            if configured and hmac.compare_digest(key.encode(), configured.encode()):
                rest = {k: v for k, v in request.query_params.items() if k != "key"}
                target = "/dashboard" + (f"?{urlencode(rest)}" if rest else "")
                response = RedirectResponse(target, status_code=303)
                response.set_cookie(COOKIE, cookie_value(configured), max_age=COOKIE_MAX_AGE, path="/dashboard",
                                    httponly=True, samesite="strict", secure=request.url.scheme == "https")
                return response
            return HTMLResponse(_login_page("That key is not the admin key."), status_code=401)
        if not dashboard_allowed(request):
            message = ("Enter the admin key." if configured
                       else "The dashboard is disabled: GATEWAY_ADMIN_KEY is not set.")
            return HTMLResponse(_login_page(message), status_code=401 if configured else 403)
        try:
            data = await dashboard_data(await fresh(), tenant or None, since)
        except StoreUnavailable as exc:
            data = {"error": f"The usage store is unavailable: {exc}"}
        except ValueError as exc:
            data = {"error": str(exc)}
        # Data inline: the page draws at load, with no second round trip (and prints headless).
        inline = orjson.dumps(data).replace(b"</", b"<\\/").decode()
        page = _asset("index.html").replace("/*__USAGE_DATA__*/null", inline)
        return HTMLResponse(page, headers={"cache-control": "no-store"})

    @router.get("/dashboard/data", include_in_schema=False)
    async def dashboard_json(request: Request, tenant: str | None = None, since: str = "7d") -> Response:
        if not dashboard_allowed(request):
            return _json({"error": {"message": "Invalid admin key.", "type": "authentication_error"}}, 401)
        return await guarded(request, lambda store: dashboard_data(store, tenant or None, since))

    @router.get("/dashboard/assets/{name}", include_in_schema=False)
    async def dashboard_asset(name: str) -> Response:
        if name not in _ASSETS:
            return _json({"error": {"message": f"No such asset: {name}.", "type": "not_found_error"}}, 404)
        return Response(_asset(name), media_type=_ASSETS[name], headers={"cache-control": "max-age=300"})

    return router


_SERIES_FIELDS = ("requests", "hits_response", "hits_semantic", "hits_single_flight", "upstream_requests",
                  "provider_reads", "input_tokens", "cached_input_tokens", "cache_creation_input_tokens",
                  "output_tokens", "hit_input_tokens", "hit_cached_input_tokens", "hit_output_tokens",
                  "cost_usd", "cost_without_cache_usd", "saved_usd", "errors")
_MONEY = ("requests", "cost_usd", "cost_without_cache_usd", "saved_usd", "hits_response", "hits_semantic",
          "hits_single_flight", "provider_reads", "upstream_requests")


async def dashboard_data(store: KVStore, tenant: str | None, since: str | None) -> dict[str, Any]:
    """Everything the dashboard draws: totals, a time series, cost per tenant and per template."""
    names = [tenant] if tenant else await query.tenants(store)
    series = await query.series(store, tenant, since or "7d")
    by_tenant: dict[str, Any] = {}
    by_template: dict[str, Any] = {}
    for name in names:
        by_tenant[name] = {k: query.shape(await query.tenant_agg(store, name, query.parse_since(since)))[k]
                           for k in ("requests", "cost_usd", "cost_without_cache_usd", "saved_usd")}
        for template, agg in (await query.breakdown(store, name, "template", since)).items():
            shown = template_label(template)
            label = shown if tenant else f"{name} · {shown}"
            by_template[label] = {k: agg[k] for k in _MONEY}
    return {
        "generated_at": time.time(),
        "tenant": tenant,
        "since": since,
        "tenants": await query.tenants(store),
        "totals": await query.totals(store, tenant, since),
        "series": [{"bucket": b["bucket"], **{k: b[k] for k in _SERIES_FIELDS}} for b in series],
        "by_tenant": by_tenant,
        "by_template": by_template,
        "breaks": await breaks_report(store, tenant, since or "7d"),
    }


def _login_page(message: str) -> str:
    return _asset("login.html").replace("{{MESSAGE}}", message)
