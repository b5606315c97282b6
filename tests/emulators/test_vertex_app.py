"""The Vertex AI emulator driven by the official clients: google-auth service-account credentials minting tokens
at the emulator's OAuth endpoint (signature and audience checked, refresh on expiry), google-genai with
`vertexai=True` for generateContent / streamGenerateContent / countTokens, and regional context caches."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import google.auth.transport.requests
import httpx2
import pytest
from google import genai
from google.auth import crypt, jwt
from google.auth import exceptions as auth_errors
from google.genai import errors, types
from google.oauth2 import service_account

from gateway_dev.emulators import EmulatorSet
from gateway_dev.emulators.vertex_auth import (
    CLOUD_PLATFORM_SCOPE,
    GOOGLE_TOKEN_AUDIENCE,
    JWT_BEARER,
    make_service_account,
)

pytestmark = pytest.mark.timeout(60)
PROJECT = "acme-vertex"
MODEL = "gemini-2.5-flash"


@pytest.fixture
def account(emu: EmulatorSet) -> Iterator[dict[str, Any]]:
    info, public = make_service_account(PROJECT, f"{emu.platform_url}/token")
    emu.platforms.vertex.register_service_account(info, public)
    emu.platforms.vertex.auth.clear()
    yield info
    emu.platforms.vertex.auth.expires_in = 3599


def _creds(info: dict[str, Any]) -> service_account.Credentials:
    return service_account.Credentials.from_service_account_info(info, scopes=[CLOUD_PLATFORM_SCOPE])


def _client(emu: EmulatorSet, info: dict[str, Any], location: str = "us-central1") -> genai.Client:
    return genai.Client(vertexai=True, project=PROJECT, location=location, credentials=_creds(info),
                        http_options=types.HttpOptions(base_url=emu.platform_url))


def _prefix(location: str = "us-central1") -> str:
    return f"/v1beta1/projects/{PROJECT}/locations/{location}"


def test_token_endpoint_verifies_the_service_account_assertion(emu: EmulatorSet, account: dict[str, Any]) -> None:
    creds = _creds(account)
    creds.refresh(google.auth.transport.requests.Request())
    assert creds.token and creds.token.startswith("ya29.") and creds.expiry is not None
    assert emu.platforms.vertex.auth.minted == [account["client_email"]]
    claims = jwt.decode(creds._make_authorization_grant_assertion(), verify=False)
    assert claims["aud"] == GOOGLE_TOKEN_AUDIENCE != account["token_uri"]  # Google's audience, posted to token_uri
    signer = crypt.RSASigner.from_service_account_info(account)
    own_aud = jwt.encode(signer, {**claims, "aud": account["token_uri"]}).decode()
    refused = httpx2.post(account["token_uri"], data={"grant_type": JWT_BEARER, "assertion": own_aud})
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    forged, _ = make_service_account(PROJECT, account["token_uri"])  # same account, a key nobody registered
    forged.update(client_email=account["client_email"], private_key_id=account["private_key_id"])
    with pytest.raises(auth_errors.RefreshError, match="invalid_grant"):
        _creds(forged).refresh(google.auth.transport.requests.Request())
    stranger, _ = make_service_account("other-project", account["token_uri"], name="nobody")
    with pytest.raises(auth_errors.RefreshError, match="account not found"):
        _creds(stranger).refresh(google.auth.transport.requests.Request())
    assert emu.platforms.vertex.auth.minted == [account["client_email"]]


def test_generate_content_with_vertexai_true(emu: EmulatorSet, account: dict[str, Any]) -> None:
    client = _client(emu, account)
    r = client.models.generate_content(model=MODEL, contents="What is the capital of France?")
    assert r.text and r.candidates[0].finish_reason == types.FinishReason.STOP
    m = r.usage_metadata
    assert m.traffic_type == types.TrafficType.ON_DEMAND and m.prompt_token_count > 0
    assert m.total_token_count == m.prompt_token_count + m.candidates_token_count + (m.thoughts_token_count or 0)
    (rec,) = emu.requests("vertex.generateContent")
    assert rec.path == f"{_prefix()}/publishers/google/models/{MODEL}:generateContent"
    token = rec.headers["authorization"].removeprefix("Bearer ")
    assert emu.platforms.vertex.auth.check(token).client_email == account["client_email"]  # type: ignore[union-attr]
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="What is the capital of France?"))
    assert "".join(c.text or "" for c in chunks) == r.text
    assert chunks[-1].usage_metadata.candidates_token_count == m.candidates_token_count
    (srec,) = emu.requests("vertex.streamGenerateContent")
    assert srec.path.endswith(f"/models/{MODEL}:streamGenerateContent")
    counted = client.models.count_tokens(model=MODEL, contents="What is the capital of France?")
    assert counted.total_tokens == m.prompt_token_count


def test_context_caches_are_regional(emu: EmulatorSet, account: dict[str, Any], long_system: str) -> None:
    central, europe = _client(emu, account), _client(emu, account, "europe-west4")
    cache = central.caches.create(model=MODEL, config=types.CreateCachedContentConfig(
        system_instruction=long_system, contents=[long_system], ttl="600s", display_name="handbook"))
    number = emu.platforms.vertex.config.projects[PROJECT]
    assert cache.name.startswith(f"projects/{number}/locations/us-central1/cachedContents/")  # type: ignore[union-attr]
    assert cache.model == f"projects/{number}/locations/us-central1/publishers/google/models/{MODEL}"
    created = emu.requests("vertex.cachedContents.create")[0]
    assert created.path == f"{_prefix()}/cachedContents"
    assert created.body["model"] == f"projects/{PROJECT}/locations/us-central1/publishers/google/models/{MODEL}"
    total = cache.usage_metadata.total_token_count  # type: ignore[union-attr]
    assert total >= 2048
    r = central.models.generate_content(model=MODEL, contents="Can I return shoes?",
                                        config=types.GenerateContentConfig(cached_content=cache.name))
    assert r.usage_metadata.cached_content_token_count == total and r.usage_metadata.prompt_token_count > total
    assert [c.name for c in central.caches.list()] == [cache.name]
    assert list(europe.caches.list()) == []
    with pytest.raises(errors.ClientError) as e:
        europe.models.generate_content(model=MODEL, contents="Can I return shoes?",
                                       config=types.GenerateContentConfig(cached_content=cache.name))
    assert e.value.code == 404
    # caches.get with the full name goes to the name's own location (the SDK builds the path from it)
    assert europe.caches.get(name=cache.name).name == cache.name  # type: ignore[arg-type]
    assert emu.requests("vertex.cachedContents.get")[0].path.startswith(f"/v1beta1/projects/{number}/locations/"
                                                                        "us-central1/")
    updated = central.caches.update(name=cache.name, config=types.UpdateCachedContentConfig(ttl="60s"))  # type: ignore
    assert updated.expire_time < cache.expire_time  # type: ignore[operator]
    central.caches.delete(name=cache.name)  # type: ignore[arg-type]
    assert list(central.caches.list()) == []
    emu.clock.advance(1)


def test_cache_rules_minimum_expiry_and_restrictions(emu: EmulatorSet, account: dict[str, Any],
                                                    long_system: str) -> None:
    client = _client(emu, account)
    with pytest.raises(errors.ClientError, match="minimum token count to start caching is 2048"):
        client.caches.create(model=MODEL, config=types.CreateCachedContentConfig(system_instruction="short"))
    cache = client.caches.create(model=MODEL, config=types.CreateCachedContentConfig(
        system_instruction=long_system, contents=[long_system]))
    assert (cache.expire_time - cache.create_time).total_seconds() == 3600  # type: ignore[operator]
    with pytest.raises(errors.ClientError, match="should not be set"):
        client.models.generate_content(model=MODEL, contents="q", config=types.GenerateContentConfig(
            cached_content=cache.name, system_instruction="again"))
    with pytest.raises(errors.ClientError, match="has to be the same"):
        client.models.generate_content(model="gemini-2.5-pro", contents="q",
                                       config=types.GenerateContentConfig(cached_content=cache.name))
    emu.clock.advance(3601)
    with pytest.raises(errors.ClientError) as e:
        client.models.generate_content(model=MODEL, contents="q",
                                       config=types.GenerateContentConfig(cached_content=cache.name))
    assert e.value.code == 404


def test_implicit_cache_is_per_location(emu: EmulatorSet, account: dict[str, Any], long_system: str) -> None:
    contents = [long_system + " " + long_system, "Which section covers refunds?"]
    central = _client(emu, account)
    assert central.models.generate_content(model=MODEL, contents=contents).usage_metadata.cached_content_token_count \
        is None
    again = central.models.generate_content(model=MODEL, contents=contents).usage_metadata
    assert again.cached_content_token_count and again.cached_content_token_count >= 2048
    tokyo = _client(emu, account, "asia-northeast1")  # keep a reference: a collected client closes its HTTP client
    elsewhere = tokyo.models.generate_content(model=MODEL, contents=contents)
    assert elsewhere.usage_metadata.cached_content_token_count is None


def test_access_token_errors(emu: EmulatorSet, account: dict[str, Any]) -> None:
    url = f"{emu.platform_url}{_prefix()}/publishers/google/models/{MODEL}:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    missing = httpx2.post(url, json=body)
    assert missing.status_code == 401 and missing.json()["error"]["status"] == "UNAUTHENTICATED"
    bogus = httpx2.post(url, json=body, headers={"authorization": "Bearer ya29.not-a-token"})
    assert bogus.status_code == 401 and "invalid authentication credentials" in bogus.json()["error"]["message"]
    outsider, public = make_service_account("someone-else", account["token_uri"], name="outsider")
    emu.platforms.vertex.register_service_account(outsider, public)
    creds = _creds(outsider)
    creds.refresh(google.auth.transport.requests.Request())
    denied = httpx2.post(url, json=body, headers={"authorization": f"Bearer {creds.token}"})
    assert denied.status_code == 403 and denied.json()["error"]["status"] == "PERMISSION_DENIED"


def test_expired_tokens_are_refused_and_the_sdk_refreshes(emu: EmulatorSet, account: dict[str, Any]) -> None:
    emu.platforms.vertex.auth.expires_in = 2  # google-auth treats a token as expired 225 s early: every call mints
    client = _client(emu, account)
    for _ in range(3):
        assert client.models.generate_content(model=MODEL, contents="hello").text
    tokens = [r.headers["authorization"] for r in emu.requests("vertex.generateContent")]
    assert len(set(tokens)) == 3 and len(emu.platforms.vertex.auth.minted) == 3
    time.sleep(2.1)
    url = f"{emu.platform_url}{_prefix()}/publishers/google/models/{MODEL}:generateContent"
    stale = httpx2.post(url, json={"contents": [{"parts": [{"text": "hi"}]}]}, headers={"authorization": tokens[0]})
    assert stale.status_code == 401
    assert client.models.generate_content(model=MODEL, contents="hello again").text  # refreshed, not failed
