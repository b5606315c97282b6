"""SSRF: nothing a caller sends can change where the gateway sends its upstream request — no body
field (`base_url`, `api_base`, ...), no model name (a URL, `../`, `?`, `#`, `@`, CR/LF), no header
(`Host`, `X-Forwarded-Host`, `Forwarded`, ...), no Gemini path trick (`models/..%2F..`). A canary
server counts any request that escapes; the emulator's log shows every upstream path stayed on the
vendor's own endpoints."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from gateway_dev.localrun import UvicornThread

from .conftest import KEYS, Probe

ALLOWED = re.compile(
    r"^(/v1/(chat/completions|responses|messages|messages/count_tokens|embeddings|models)"
    r"|/v1(beta)?/models/[A-Za-z0-9._-]+:(generateContent|streamGenerateContent|countTokens)"
    r"|/v1(beta)?/cachedContents(/[A-Za-z0-9._-]+)?)$")


class Canary:
    def __init__(self) -> None:
        self.hits: list[str] = []

        async def any_path(request):  # type: ignore[no-untyped-def]
            self.hits.append(f"{request.method} {request.url}")
            return PlainTextResponse("canary")

        app = Starlette(routes=[Route("/{path:path}", any_path, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])])
        self.server = UvicornThread(app)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.port}"


@pytest.fixture(scope="module")
def canary() -> Iterator[Canary]:
    c = Canary()
    c.server.start()
    try:
        yield c
    finally:
        c.server.stop()


def _check_upstream_paths(probe: Probe, canary: Canary, since: int) -> None:
    paths = [r.path for r in probe.emu.requests()[since:]]
    assert canary.hits == [], canary.hits
    assert [p for p in paths if not ALLOWED.match(p) or ".." in p] == [], paths


def _bodies(model: str, extra: dict) -> list[tuple[str, dict]]:
    return [("/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "ssrf?"}], **extra}),
            ("/v1/responses", {"model": model, "input": "ssrf?", **extra})]


URL_FIELDS = ["base_url", "api_base", "baseURL", "url", "endpoint", "api_url", "host", "upstream", "proxy"]


def test_body_fields_cannot_steer_the_upstream(probe: Probe, canary: Canary) -> None:
    since = len(probe.emu.requests())
    target = f"http://{canary.host}/v1"
    extra = {name: target for name in URL_FIELDS} | {"extra_body": {"api_base": target}, "metadata": {"url": target}}
    for path, body in [*_bodies("gpt-4o-mini", extra),
                       ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 16, **extra,
                                         "messages": [{"role": "user", "content": "ssrf?"}]}),
                       ("/v1beta/models/gemini-2.5-flash:generateContent",
                        {"contents": [{"parts": [{"text": "ssrf?"}]}], **extra})]:
        resp = probe.post(path, body, headers={"anthropic-version": "2023-06-01"})
        assert resp.status_code < 500, resp.text
    _check_upstream_paths(probe, canary, since)


def test_model_names_cannot_steer_the_upstream(probe: Probe, canary: Canary) -> None:
    since = len(probe.emu.requests())
    c = canary.host
    models = [f"http://{c}/v1", f"//{c}/x", f"gpt-4o@{c}", f"gpt-4o-mini@{c}/v1", "../../../x", "gpt-4o/../../admin",
              "gemini-2.5-flash/../../../v1beta/cachedContents", "gemini-2.5-flash:generateContent?alt=sse#",
              "gemini-x?key=stolen", "gemini-%2e%2e%2fx", "claude-x\r\nHost: evil", "gemini-x\r\nX-Injected: 1",
              f"vllm/http://{c}", "gemini-2.5-flash#fragment", "gemini-..", "gemini-x/../y"]
    for model in models:
        for path, body in _bodies(model, {}):
            resp = probe.post(path, body)
            raw = resp.request.content
            assert resp.status_code < 500 or not probe.gateway_5xx(resp.status_code, path, raw), (model, resp.text)
    _check_upstream_paths(probe, canary, since)


def test_headers_cannot_steer_the_upstream(probe: Probe, canary: Canary) -> None:
    since = len(probe.emu.requests())
    c = canary.host
    headers = {"x-forwarded-host": c, "x-forwarded-proto": "http", "forwarded": f"host={c};proto=http",
               "x-original-url": "/admin/policies/reload", "x-rewrite-url": "/admin", "x-host": c,
               "x-forwarded-server": c, "x-http-method-override": "DELETE"}
    for path, body in _bodies("gpt-4o-mini", {}):
        resp = probe.post(path, body, headers=headers)
        assert resp.status_code == 200, resp.text
        resp = probe.post(path, body, headers={"host": c})
        assert resp.status_code == 200, resp.text
    _check_upstream_paths(probe, canary, since)


RAW_PATHS = ["/v1beta/models/..%2F..%2Fx:generateContent", "/v1beta/models/%2e%2e:generateContent",
             "/v1beta/models/..:generateContent",
             "/v1beta/models/%2e%2e%2f%2e%2e%2fv1beta%2fcachedContents:generateContent",
             "/v1beta/models/gemini-2.5-flash%3AgenerateContent%3Fx%3D:generateContent",
             "/v1beta/models/gemini-2.5-flash:generateContent/../../../x",
             "/v1beta/cachedContents/..", "/v1beta/cachedContents/%2e%2e%2fmodels", "/v1beta/../v1/chat/completions",
             "//127.0.0.1:1/v1/chat/completions", "/v1beta/models/@127.0.0.1:1:generateContent",
             "/v1beta/models/..:countTokens", "/v1/models/%2e%2e:countTokens", "/v1beta/models/a%3Fb:countTokens"]


@pytest.mark.parametrize("raw_path", RAW_PATHS)
def test_gemini_path_tricks_stay_on_the_vendor(probe: Probe, canary: Canary, raw_path: str) -> None:
    since = len(probe.emu.requests())
    body = b'{"contents":[{"parts":[{"text":"ssrf?"}]}]}'
    request = (f"POST {raw_path} HTTP/1.1\r\nHost: {canary.host}\r\nContent-Type: application/json\r\n"
               f"x-goog-api-key: {KEYS['alpha']}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    assert probe.gw.server is not None
    with socket.create_connection((probe.gw.server.host, probe.gw.server.port), timeout=15) as s:
        s.sendall(request + body)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    assert status < 500, answer[:400]
    _check_upstream_paths(probe, canary, since)
