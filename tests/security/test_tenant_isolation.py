"""Cross-tenant probes: the tenant comes from the key only; nothing a caller sends elsewhere (headers,
body fields, the query string outside Gemini) changes whose cache, usage or identity a request has."""

from __future__ import annotations

import time

import pytest

from .conftest import ADMIN, KEYS, Probe

# One request per protocol: (path, body, extra headers); the same probe runs through all four.
PROTOCOLS = {
    "chat": ("/v1/chat/completions", lambda q: {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": q}]},
             {}),
    "responses": ("/v1/responses", lambda q: {"model": "gpt-4o-mini", "input": q}, {}),
    "messages": ("/v1/messages", lambda q: {"model": "claude-sonnet-4-5", "max_tokens": 64,
                                           "messages": [{"role": "user", "content": q}]},
                 {"anthropic-version": "2023-06-01"}),
    "gemini": ("/v1beta/models/gemini-2.5-flash:generateContent",
               lambda q: {"contents": [{"role": "user", "parts": [{"text": q}]}]}, {}),
}


def _unique(tag: str) -> str:
    return f"{tag} {time.monotonic_ns()}: what does our refund policy say about damaged items?"


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_same_prompt_from_another_tenant_is_a_miss(probe: Probe, protocol: str) -> None:
    path, make, headers = PROTOCOLS[protocol]
    body = make(_unique(protocol))
    first = probe.post(path, body, key=KEYS["alpha"], headers=headers)
    assert first.status_code == 200, first.text
    probe.gw.wait_idle()
    again = probe.post(path, body, key=KEYS["alpha"], headers=headers)
    assert again.headers["x-gateway-cache"] == "response-hit"  # the entry exists for alpha...
    other = probe.post(path, body, key=KEYS["beta"], headers=headers)
    assert other.status_code == 200
    assert other.headers["x-gateway-cache"] == "miss"  # ...and beta cannot see it, nor learn of it


FORGED_HEADERS = {"x-gateway-tenant": "alpha", "x-tenant": "alpha", "x-tenant-id": "alpha",
                  "x-gateway-user": "alpha", "x-forwarded-user": "alpha", "x-api-key": KEYS["alpha"]}


def test_forged_tenant_headers_and_body_fields_change_nothing(probe: Probe) -> None:
    path, make, _ = PROTOCOLS["chat"]
    body = make(_unique("forged"))
    assert probe.post(path, body, key=KEYS["alpha"]).status_code == 200
    probe.gw.wait_idle()
    # beta's key in Authorization wins over everything alpha-looking it adds
    forged = probe.post(path, body, key=KEYS["beta"], headers=FORGED_HEADERS)
    assert forged.status_code == 200 and forged.headers["x-gateway-cache"] == "miss"
    # body fields naming a tenant or user are just request content (and part of the cache key)
    fields = probe.post(path, {**body, "user": "alpha", "tenant": "alpha", "metadata": {"tenant": "alpha"}},
                        key=KEYS["beta"], headers=FORGED_HEADERS)
    assert fields.status_code == 200 and fields.headers["x-gateway-cache"] == "miss"
    probe.gw.wait_idle()
    records = probe.http.get("/admin/usage/records", params={"tenant": "beta", "limit": "50"},
                             headers={"authorization": f"Bearer {ADMIN}"}).json()
    by_id = {r["request_id"]: r for r in records}
    for resp in (forged, fields):
        assert by_id[resp.headers["x-gateway-request-id"]]["tenant"] == "beta"


def test_the_tenant_key_never_goes_upstream(probe: Probe) -> None:
    path, make, _ = PROTOCOLS["chat"]
    resp = probe.post(path, make(_unique("upstream-key")), key=KEYS["alpha"])
    assert resp.status_code == 200
    sent = probe.emu.requests("openai.chat")[-1]
    assert sent.headers.get("authorization") == "Bearer sk-gateway-openai"  # the gateway's own vendor key
    assert KEYS["alpha"] not in str(sent.headers)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/embeddings"])
def test_a_key_in_the_query_does_not_authenticate_outside_gemini(probe: Probe, path: str) -> None:
    # Keys in URLs end up in access logs and proxies; no OpenAI or Anthropic SDK sends one, so the
    # gateway reads `?key=` only on Gemini's paths, where it is that API's documented form.
    resp = probe.post(path, {"model": "gpt-4o-mini", "input": "x", "messages": []}, key=None,
                      params={"key": KEYS["alpha"]}, headers={"anthropic-version": "2023-06-01"})
    assert resp.status_code == 401, resp.text


def test_a_key_in_the_query_authenticates_on_gemini_and_is_not_forwarded(probe: Probe) -> None:
    path, make, _ = PROTOCOLS["gemini"]
    resp = probe.post(path, make(_unique("query-key")), key=None, params={"key": KEYS["alpha"]})
    assert resp.status_code == 200, resp.text
    sent = probe.emu.requests("gemini.generateContent")[-1]
    assert "key=" not in sent.path and KEYS["alpha"] not in str(sent.headers)
    # A header key beats a query key: the request is beta's, not alpha's.
    body = make(_unique("header-wins"))
    assert probe.post(path, body, key=None, params={"key": KEYS["alpha"]}).status_code == 200
    probe.gw.wait_idle()
    both = probe.post(path, body, key=None, params={"key": KEYS["alpha"]},
                      headers={"x-goog-api-key": KEYS["beta"]})
    assert both.status_code == 200 and both.headers["x-gateway-cache"] == "miss"


def test_unknown_and_malformed_keys_get_401_in_the_vendor_shape(probe: Probe) -> None:
    for path, vendor_key in (("/v1/chat/completions", "error"), ("/v1/messages", "type")):
        for headers in ({"authorization": "Bearer nope"}, {"authorization": "Basic Zm9vOmJhcg=="},
                        {"authorization": "Bearer"}, {"x-api-key": "nope"}, {}):
            resp = probe.post(path, {"model": "gpt-4o-mini", "messages": []}, key=None,
                              headers={**headers, "anthropic-version": "2023-06-01"})
            assert resp.status_code == 401, (path, headers, resp.text)
            assert vendor_key in resp.json()
