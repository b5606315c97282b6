"""The upstream client keeps no cookies: a vendor's Set-Cookie on one tenant's request must never ride
along on another tenant's later request through the same pooled session."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.config import Settings
from gateway.upstream.client import UpstreamClients


async def test_a_vendors_cookie_is_not_sent_on_later_requests() -> None:
    seen: list[str | None] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Cookie"))
        response = web.json_response({"ok": True})
        response.set_cookie("session", "tenant-a-secret")
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    clients = UpstreamClients(Settings())
    try:
        session = clients.session("openai")
        # a host name: aiohttp's default jar would ignore cookies from a bare IP address
        url = f"http://localhost:{server.port}/v1/chat/completions"
        for _ in range(2):
            async with session.post(url, json={}) as r:
                assert r.status == 200
                assert "session" in r.cookies  # the vendor did set one
    finally:
        await clients.close()
        await server.close()
    assert seen == [None, None]
