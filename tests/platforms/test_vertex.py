"""Vertex AI through the gateway: google-genai with `vertexai=True` (a credentials object holding the tenant key)
and the OpenAI protocol with `vertex_ai/<model>`, plain and streamed. The emulator's text and usage come back
exactly; upstream the emulator saw an access token minted from the gateway's service account; a long system
instruction makes one regional CachedContent that every call names, never one from another location; the token
is refreshed before it expires without a failed request; records, response cache, isolation and metrics."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import orjson
import pytest
from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials

from gateway_dev.emulators import EmulatorSet
from gateway_dev.localrun import LocalGateway

from .conftest import KEYS, PROJECT, TENANTS, usage_records

pytestmark = pytest.mark.timeout(180)
MODEL = "gemini-2.5-flash"
HANDBOOK = "You answer questions about the Acme handbook. " + " ".join(
    f"Rule {i}: items may be returned within {i + 10} days with a receipt." for i in range(260))


def client(gw: LocalGateway, tenant: str = "acme", location: str = "us-central1") -> genai.Client:
    return genai.Client(vertexai=True, project="clients-own-project", location=location,
                        credentials=Credentials(token=KEYS[tenant]),
                        http_options=types.HttpOptions(base_url=gw.url, client_args={
                            "verify": str(gw.server.tls[0])}))  # type: ignore[union-attr]


def config(**kw: Any) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(http_options=types.HttpOptions(headers={"cache-control": "no-store"}), **kw)


def direct(emu: EmulatorSet, gw: LocalGateway, body: dict[str, Any], location: str = "us-central1") -> dict[str, Any]:
    token = gw.call(gw.components.providers.get("vertex_ai").signer.token())  # type: ignore[union-attr]
    r = httpx2.post(f"{emu.platform_url}/v1/projects/{PROJECT}/locations/{location}/publishers/google/models/"
                    f"{MODEL}:generateContent", headers={"authorization": f"Bearer {token}"},
                    content=orjson.dumps(body))
    assert r.status_code == 200, r.text
    return r.json()


def seen_account(emu: EmulatorSet, endpoint: str) -> str:
    auth = emu.requests(endpoint)[-1].headers["authorization"]
    token = emu.platforms.vertex.auth.check(auth.removeprefix("Bearer "))
    assert token is not None
    return token.client_email


def test_genai_vertex_plain_and_streamed(gw: LocalGateway, emu: EmulatorSet,
                                         service_account: tuple[dict[str, Any], Path]) -> None:
    question = "Why is the sea salty?"
    expected = direct(emu, gw, {"contents": [{"role": "user", "parts": [{"text": question}]}]})
    emu.reset(caches=True)
    c = client(gw)
    got = c.models.generate_content(model=MODEL, contents=question, config=config())
    assert got.text == expected["candidates"][0]["content"]["parts"][0]["text"]
    usage = got.usage_metadata
    assert usage is not None and usage.prompt_token_count == expected["usageMetadata"]["promptTokenCount"]
    assert usage.candidates_token_count == expected["usageMetadata"]["candidatesTokenCount"]
    seen = emu.requests("vertex.generateContent")[-1]
    assert f"/projects/{PROJECT}/locations/us-central1/" in seen.path  # the gateway's project, the path's location
    assert seen_account(emu, "vertex.generateContent") == service_account[0]["client_email"]
    assert KEYS["acme"] not in str(seen.headers)
    streamed = list(c.models.generate_content_stream(model=MODEL, contents=question, config=config()))
    assert "".join(chunk.text or "" for chunk in streamed) == got.text
    assert streamed[-1].usage_metadata.candidates_token_count == usage.candidates_token_count  # type: ignore[union-attr]
    assert seen_account(emu, "vertex.streamGenerateContent") == service_account[0]["client_email"]


def test_openai_protocol(gw: LocalGateway, emu: EmulatorSet) -> None:
    question = "Why is the sky blue?"
    expected = direct(emu, gw, {"contents": [{"role": "user", "parts": [{"text": question}]}]})
    text = expected["candidates"][0]["content"]["parts"][0]["text"]
    with openai.OpenAI(base_url=gw.url + "/v1", api_key=KEYS["acme"], max_retries=0,
                       http_client=openai.DefaultHttpxClient(verify=gw.server.tls[0])) as oai:  # type: ignore[union-attr]
        got = oai.chat.completions.create(model=f"vertex_ai/{MODEL}", messages=[  # type: ignore[arg-type]
            {"role": "user", "content": question}], extra_headers={"cache-control": "no-store"})
        assert got.choices[0].message.content == text
        assert got.usage.prompt_tokens == expected["usageMetadata"]["promptTokenCount"]  # type: ignore[union-attr]
        chunks = list(oai.chat.completions.create(model=f"vertex_ai/{MODEL}", stream=True, messages=[  # type: ignore[arg-type]
            {"role": "user", "content": question}], extra_headers={"cache-control": "no-store"}))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert "/locations/us-central1/" in emu.requests("vertex.streamGenerateContent")[-1].path  # the configured one


def test_one_regional_cache_named_by_every_call(gw: LocalGateway, emu: EmulatorSet) -> None:
    west = client(gw, location="europe-west4")
    ids = []
    for i in range(3):
        raw = west.models.generate_content(model=MODEL, contents=f"Question {i}: can I return shoes?",
                                           config=types.GenerateContentConfig(system_instruction=HANDBOOK))
        ids.append(raw.sdk_http_response.headers["x-gateway-request-id"])  # type: ignore[union-attr]
    caches = list(emu.platforms.vertex.caches.values())
    assert len(caches) == 1 and caches[0].location == "europe-west4"
    assert emu.calls("vertex.cachedContents.create") == 1
    named = [r.body.get("cachedContent") for r in emu.requests("vertex.generateContent")]
    assert named == [caches[0].name] * 3 and "/locations/europe-west4/" in caches[0].name
    records = usage_records(gw, "acme", set(ids))
    assert all(r["cached_input_tokens"] >= 2048 for r in records.values())
    assert {r["details"]["provider_cache"]["decision"] for r in records.values()} <= {"create", "reuse", "extend"}
    # the same prompt from another location never names the europe-west4 cache
    central = client(gw, location="us-central1")
    central.models.generate_content(model=MODEL, contents="Question 9: can I return shoes?",
                                    config=types.GenerateContentConfig(system_instruction=HANDBOOK))
    other = emu.requests("vertex.generateContent")[-1]
    assert "/locations/us-central1/" in other.path
    assert other.body.get("cachedContent") != caches[0].name
    assert all("/locations/us-central1/" in c.name for c in emu.platforms.vertex.caches.values()
               if c.name != caches[0].name)


def test_response_cache_isolation_and_metrics(gw: LocalGateway, emu: EmulatorSet) -> None:
    question = "Name a mountain (vertex cache test)."
    acme, globex = client(gw), client(gw, "globex")  # held: a dropped genai.Client closes its HTTP client
    first = acme.models.generate_content(model=MODEL, contents=question)
    gw.wait_idle()
    second = acme.models.generate_content(model=MODEL, contents=question)
    assert second.sdk_http_response.headers["x-gateway-cache"] == "response-hit"  # type: ignore[union-attr]
    assert second.text == first.text and emu.calls("vertex.generateContent") == 1
    theirs = globex.models.generate_content(model=MODEL, contents=question)
    assert theirs.sdk_http_response.headers["x-gateway-cache"] == "miss"  # type: ignore[union-attr]
    metrics = httpx2.get(gw.url + "/metrics", verify=gw.server.tls[0]).text  # type: ignore[union-attr]
    assert 'provider="vertex_ai"' in metrics


@pytest.fixture
def short_tokens(emu: EmulatorSet, service_account: tuple[dict[str, Any], Path], tls: tuple[Path, Path],
                 tmp_path: Path) -> Iterator[LocalGateway]:
    emu.platforms.vertex.auth.expires_in = 2  # seconds: the gateway must refresh twice a run
    gateway = LocalGateway(emu, TENANTS, tmp_path, tls=(str(tls[0]), str(tls[1])),
                           vertex_ai_base_url=emu.platform_url, vertex_project=PROJECT,
                           vertex_credentials=str(service_account[1])).start()
    try:
        yield gateway
    finally:
        gateway.stop()
        emu.platforms.vertex.auth.expires_in = 3599


def test_token_refreshed_before_expiry_without_a_failed_request(short_tokens: LocalGateway, emu: EmulatorSet,
                                                                service_account: tuple[dict[str, Any], Path]) -> None:
    minted_before = len(emu.platforms.vertex.auth.minted)
    c = client(short_tokens)
    started, statuses = time.monotonic(), []
    tokens: set[str] = set()
    while time.monotonic() - started < 4.5:
        got = c.models.generate_content(model=MODEL, contents="ping", config=config())
        statuses.append(bool(got.text))
        tokens.add(emu.requests("vertex.generateContent")[-1].headers["authorization"])
        time.sleep(0.1)
    assert all(statuses) and len(statuses) > 10
    # refreshed in the background ahead of expiry (2 s tokens over 4.5 s), never on a failed request
    assert len(tokens) >= 2 and len(emu.platforms.vertex.auth.minted) - minted_before >= 2
