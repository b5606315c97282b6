"""The admin API refuses callers without the admin key; hostile bodies (oversized, deeply nested,
invalid UTF-8, not an object) get a clear 4xx in the caller's vendor shape, never a 500."""

from __future__ import annotations

import httpx2
import orjson
import pytest

from gateway_dev.localrun import LocalGateway

from .conftest import ADMIN, KEYS, MAX_BODY, TENANTS, Probe, assert_error_shape, vendor_of

ADMIN_CALLS = [("POST", "/admin/policies/reload", None), ("POST", "/admin/cache/purge", {"tenant": "alpha"}),
               ("GET", "/admin/usage", None), ("GET", "/admin/usage/records", None),
               ("GET", "/admin/usage/report", None)]
GENERATE = [("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}),
            ("/v1/responses", {"model": "gpt-4o-mini", "input": "hi"}),
            ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 16,
                              "messages": [{"role": "user", "content": "hi"}]}),
            ("/v1beta/models/gemini-2.5-flash:generateContent", {"contents": [{"parts": [{"text": "hi"}]}]}),
            ("/v1/models/gemini-2.5-flash:streamGenerateContent", {"contents": [{"parts": [{"text": "hi"}]}]}),
            ("/v1/embeddings", {"model": "text-embedding-3-small", "input": "hi"}),
            ("/v1/messages/count_tokens", {"model": "claude-sonnet-4-5", "messages": []})]
HEADERS = {"anthropic-version": "2023-06-01"}


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS)
@pytest.mark.parametrize("auth", [None, "Bearer wrong-admin-key", f"Bearer {KEYS['alpha']}", "Basic YWRtaW46YWRtaW4="])
def test_admin_api_refuses_without_the_admin_key(probe: Probe, method: str, path: str, body: object,
                                                 auth: str | None) -> None:
    headers = {"authorization": auth} if auth else {}
    resp = probe.http.request(method, path, json=body, headers=headers, params={"key": ADMIN})  # query: ignored
    assert resp.status_code == 401, resp.text
    assert isinstance(resp.json()["error"]["message"], str)


def test_admin_api_with_the_key_answers(probe: Probe) -> None:
    resp = probe.http.get("/admin/usage", params={"tenant": "alpha"}, headers={"authorization": f"Bearer {ADMIN}"})
    assert resp.status_code == 200 and "requests" in resp.json()


def test_admin_api_is_closed_when_no_admin_key_is_configured(probe: Probe, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with LocalGateway(probe.emu, TENANTS, tmp_path) as gw:
        for method, path, body in ADMIN_CALLS:
            resp = httpx2.request(method, gw.url + path, json=body, headers={"authorization": f"Bearer {ADMIN}"})
            assert resp.status_code in (401, 403), (path, resp.status_code)
            assert resp.json()["error"]["message"]


@pytest.mark.parametrize(("path", "body"), GENERATE)
def test_oversized_body_is_413(probe: Probe, path: str, body: dict) -> None:
    big = {**body, "padding": "x" * (MAX_BODY + 1)}
    resp = probe.post(path, big, headers=HEADERS)
    assert resp.status_code == 413, resp.text
    assert_error_shape(vendor_of(path), resp)
    # the same without a Content-Length: the limit holds while the body streams in
    raw = orjson.dumps(big)
    chunked = probe.http.post(path, content=iter([raw[i:i + 8192] for i in range(0, len(raw), 8192)]),
                              headers={"authorization": f"Bearer {KEYS['alpha']}", **HEADERS})
    assert chunked.status_code == 413, chunked.text


def _with_nested(body: dict, key: str, depth: int) -> bytes:
    """`body` with `key` set to `depth` levels of alternating objects and arrays (written by hand:
    orjson writes at most 254 levels)."""
    head = b"".join(b"[" if i % 2 else b'{"a":' for i in range(depth))
    tail = b"".join(b"]" if i % 2 else b"}" for i in reversed(range(depth)))
    rest = orjson.dumps({k: v for k, v in body.items() if k != key})
    sep = b"" if rest == b"{}" else b","
    return rest[:-1] + sep + b'"' + key.encode() + b'":' + head + b'"hi"' + tail + b"}"


@pytest.mark.parametrize(("path", "body"), GENERATE[:4])
@pytest.mark.parametrize("depth", [200, 900, 1100, 5000])
def test_deeply_nested_json_is_refused_or_served_never_500(probe: Probe, path: str, body: dict, depth: int) -> None:
    # nested in an unknown field (part of the cache key), and where the conversation should be
    conversation = "contents" if "gemini" in path else "input" if "responses" in path else "messages"
    for key in ("extra", conversation):
        raw = _with_nested(body, key, depth)
        resp = probe.post(path, raw=raw, headers=HEADERS)
        assert resp.status_code < 500 or not probe.gateway_5xx(resp.status_code, path, raw), (depth, key, resp.text)
        if resp.status_code >= 400:
            assert_error_shape(vendor_of(path), resp)


INVALID = [b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"\xff\xfe"}]}',
           b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"\\ud800"}]}',
           b'{"model":"gpt-4o-\xc3\x28mini","messages":[]}', b"\xef\xbb\xbf{}", b"", b"[]", b'"text"', b"null",
           b"1e999",
           b'{"model": "gpt-4o-mini", "messages": [', b"{" * 100_000]


@pytest.mark.parametrize(("path", "body"), GENERATE[:4])
@pytest.mark.parametrize("raw", INVALID, ids=range(len(INVALID)))
def test_invalid_bodies_get_400(probe: Probe, path: str, body: dict, raw: bytes) -> None:
    resp = probe.post(path, raw=raw, headers=HEADERS)
    assert resp.status_code in (400, 404, 413), (raw[:60], resp.status_code, resp.text)
    assert_error_shape(vendor_of(path), resp)


@pytest.mark.parametrize("raw_header", [b"Bearer \xff\xfe", b"Bearer " + "ключ".encode()])
def test_non_ascii_credentials_are_401(probe: Probe, raw_header: bytes) -> None:
    import socket

    body = b'{"model":"gpt-4o-mini","messages":[]}'
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Authorization: " + raw_header + b"\r\nContent-Length: " + str(len(body)).encode() +
               b"\r\nConnection: close\r\n\r\n" + body)
    with socket.create_connection((probe.gw.server.host, probe.gw.server.port), timeout=10) as s:  # type: ignore[union-attr]
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    assert status in (400, 401), answer[:300]
