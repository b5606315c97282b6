"""Admin usage routes and the dashboard's auth, through the ASGI app (httpx2 in-process)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx2
import orjson
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response
from test_query import mixed

from gateway.accounting.pricing import PriceBook
from gateway.auth import check_admin
from gateway.config import Settings
from gateway.errors import GatewayError
from gateway.stores.memory import MemoryStore
from gateway.usage.api import COOKIE, cookie_value, usage_router
from gateway.usage.stage import UsageStage

KEY = "admin-secret"


def build_app(store: MemoryStore, stage: UsageStage, key: str | None = KEY) -> FastAPI:
    app = FastAPI()

    def require_admin(request: Request) -> None:
        check_admin(request.headers, key)

    @app.exception_handler(GatewayError)
    async def refused(request: Request, exc: GatewayError) -> Response:
        return Response(orjson.dumps({"error": {"message": exc.message}}), status_code=exc.status,
                        media_type="application/json")

    app.include_router(usage_router(lambda: store, require_admin, admin_key=lambda: key, stage=lambda: stage))
    return app


@pytest.fixture
async def client(book: PriceBook) -> AsyncIterator[httpx2.AsyncClient]:
    store = MemoryStore()
    stage = UsageStage(Settings(), store, prices=book)
    now = time.time()
    for rec in mixed(book, "acme", now) + mixed(book, "globex", now)[:4]:
        stage.recorder.add(rec)  # buffered only: the routes must flush before they read
    transport = httpx2.ASGITransport(app=build_app(store, stage))
    async with httpx2.AsyncClient(transport=transport, base_url="http://gw.test") as c:
        yield c


async def test_admin_usage_needs_the_key(client: httpx2.AsyncClient) -> None:
    assert (await client.get("/admin/usage", params={"tenant": "acme"})).status_code == 401
    r = await client.get("/admin/usage", params={"tenant": "acme"}, headers={"authorization": "Bearer nope"})
    assert r.status_code == 401


async def test_admin_usage_totals_and_records(client: httpx2.AsyncClient) -> None:
    auth = {"authorization": f"Bearer {KEY}"}
    totals = (await client.get("/admin/usage", params={"tenant": "acme"}, headers=auth)).json()
    for field in ("requests", "input_tokens", "cached_input_tokens", "cache_creation_input_tokens",
                  "cache_read_input_tokens", "output_tokens", "cost_usd", "cost_without_cache_usd", "hits"):
        assert field in totals
    assert totals["requests"] == 9 and totals["hits"]["response"] == 1
    records = (await client.get("/admin/usage/records", params={"tenant": "acme", "limit": 3}, headers=auth)).json()
    assert len(records) == 3 and all(r["tenant"] == "acme" for r in records)
    everyone = (await client.get("/admin/usage", headers=auth)).json()
    assert everyone["requests"] == 13 and set(everyone["tenants"]) == {"acme", "globex"}
    bad = await client.get("/admin/usage", params={"since": "soon"}, headers=auth)
    assert bad.status_code == 400
    assert (await client.get("/admin/usage/records", params={"limit": 0}, headers=auth)).status_code == 422


async def test_admin_report(client: httpx2.AsyncClient) -> None:
    r = await client.get("/admin/usage/report", params={"since": "7d"}, headers={"authorization": f"Bearer {KEY}"})
    data = r.json()
    acme = next(t for t in data["tenants"] if t["tenant"] == "acme")
    templates = {row["template"]: row for row in acme["templates"]}
    assert templates["summarize@2"]["model"] == "claude-sonnet-4-5"
    assert templates["summarize@2"]["breakeven"]["applies"]


async def test_dashboard_key_once_then_cookie(client: httpx2.AsyncClient) -> None:
    anonymous = await client.get("/dashboard")
    assert anonymous.status_code == 401 and "Admin key" in anonymous.text
    assert (await client.get("/dashboard", params={"key": "wrong"})).status_code == 401
    login = await client.get("/dashboard", params={"key": KEY, "tenant": "acme"})
    assert login.status_code == 303 and login.headers["location"] == "/dashboard?tenant=acme"
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and KEY not in cookie
    page = await client.get("/dashboard", params={"tenant": "acme"}, cookies={COOKIE: cookie_value(KEY)})
    assert page.status_code == 200 and "window.USAGE = {" in page.text
    inline = page.text.split("window.USAGE = ", 1)[1].split(";</script>", 1)[0]
    assert orjson.loads(inline)["totals"]["requests"] == 9
    data = await client.get("/dashboard/data", params={"since": "24h"}, headers={"authorization": f"Bearer {KEY}"})
    assert data.status_code == 200 and set(data.json()["by_tenant"]) == {"acme", "globex"}
    assert (await client.get("/dashboard/data", cookies={COOKIE: "forged"})).status_code == 401
    asset = await client.get("/dashboard/assets/dashboard.js")
    assert asset.status_code == 200 and "lineChart" in asset.text
    assert (await client.get("/dashboard/assets/secrets.txt")).status_code == 404


async def test_dashboard_refuses_everyone_without_an_admin_key(book: PriceBook) -> None:
    store = MemoryStore()
    app = build_app(store, UsageStage(Settings(), store, prices=book), key=None)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://gw.test") as c:
        assert (await c.get("/dashboard", params={"key": ""})).status_code == 401
        assert (await c.get("/dashboard")).status_code == 403
