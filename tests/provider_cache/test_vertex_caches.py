"""Vertex AI context caches through the shared CachedContent lifecycle (`gemini.py` + `cache_api.py`) against the
Vertex emulator: created in the request's location with the gateway's service-account token, the handle keyed
on project and location (another location never finds it), and the purge deletes each cache in its own
location."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from gateway.provider_cache import gemini
from gateway.provider_cache.cache_api import GeminiApi, VertexApi, api_of_record, vertex_base_url
from gateway.provider_cache.tokens import TokenCounter
from gateway.signing.vertex_token import VertexTokenProvider
from gateway.stores import KVStore
from gateway_dev.emulators import EmulatorSet
from gateway_dev.emulators.vertex_auth import make_service_account
from tests.provider_cache.test_gemini import body

MODEL = "gemini-2.5-flash"
PROJECT = "gw-project"


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    c = TokenCounter()
    assert c.load()
    return c


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
def account(emu: EmulatorSet) -> Iterator[dict[str, Any]]:
    info, public = make_service_account(PROJECT, f"{emu.platform_url}/token")
    emu.platforms.vertex.register_service_account(info, public)
    yield info


@pytest.fixture
async def tokens(account: dict[str, Any]) -> AsyncIterator[VertexTokenProvider]:
    provider = VertexTokenProvider.from_service_account_info(account)
    await provider.start()
    yield provider
    await provider.close()


def api(emu: EmulatorSet, location: str, tokens: VertexTokenProvider) -> VertexApi:
    return VertexApi(vertex_base_url(emu.platform_url, location), PROJECT, location, tokens.token)


def prefix(counter: TokenCounter, a: VertexApi) -> gemini.Prefix:
    p, _ = gemini.choose_prefix(body(), MODEL, a.scope, 2, 2048, counter)
    assert p is not None
    return p


async def test_created_in_its_location_and_found_only_there(emu: EmulatorSet, kv: KVStore, tenant: str,
                                                            session: aiohttp.ClientSession, counter: TokenCounter,
                                                            tokens: VertexTokenProvider) -> None:
    caches = gemini.GeminiCaches(kv, lambda: session)
    central, west = api(emu, "us-central1", tokens), api(emu, "europe-west4", tokens)
    p_central, p_west = prefix(counter, central), prefix(counter, west)
    assert p_central.cache_id != p_west.cache_id  # the identity carries project and location
    handle, outcome = await caches.create(tenant, p_central, MODEL, "", "", 600, api=central)
    assert outcome == "created" and handle is not None
    assert handle["name"].startswith("projects/") and "/locations/us-central1/cachedContents/" in handle["name"]
    assert (handle["api"], handle["location"], handle["project"]) == ("vertex", "us-central1", PROJECT)
    created = emu.requests("vertex.cachedContents.create")[-1]
    assert created.body["model"] == f"projects/{PROJECT}/locations/us-central1/publishers/google/models/{MODEL}"
    assert created.headers["authorization"] == f"Bearer {tokens.current()}"  # the gateway's minted token
    assert await caches.handle(tenant, p_central) is not None
    assert await caches.handle(tenant, p_west) is None  # never used from another location
    # the cache works from its own location and is refused from another one, as Vertex does
    async with session.post(f"{emu.platform_url}/v1beta1/projects/{PROJECT}/locations/europe-west4/publishers/google/"
                            f"models/{MODEL}:generateContent", headers=await central.headers(),
                            json={"cachedContent": handle["name"], "contents": [{"role": "user",
                                                                                 "parts": [{"text": "q"}]}]}) as r:
        assert r.status in (400, 404)


async def test_purge_deletes_in_each_location(emu: EmulatorSet, kv: KVStore, tenant: str,
                                              session: aiohttp.ClientSession, counter: TokenCounter,
                                              tokens: VertexTokenProvider) -> None:
    caches = gemini.GeminiCaches(kv, lambda: session)
    for location in ("us-central1", "europe-west4", "asia-northeast1"):
        a = api(emu, location, tokens)
        handle, outcome = await caches.create(tenant, prefix(counter, a), MODEL, "", "", 600, api=a)
        assert outcome == "created" and handle is not None
    assert {c.location for c in emu.platforms.vertex.caches.values()} == {"us-central1", "europe-west4",
                                                                          "asia-northeast1"}
    assert await caches.purge(tenant, None, tokens.token) == 3
    assert emu.calls("vertex.cachedContents.delete") == 3 and emu.platforms.vertex.caches == {}


def test_base_urls_and_record_apis() -> None:
    assert vertex_base_url(None, "us-east5") == "https://us-east5-aiplatform.googleapis.com"
    assert vertex_base_url("http://proxy.local/{location}/", "eu") == "http://proxy.local/eu"
    assert vertex_base_url("http://127.0.0.1:9", "eu") == "http://127.0.0.1:9"

    async def token() -> str:
        return "t"

    assert isinstance(api_of_record({"api": "vertex", "base": "b", "location": "l", "project": "p"}, None, token),
                      VertexApi)
    gem = GeminiApi("b", "k").describe()
    assert isinstance(api_of_record(gem, "k", None), GeminiApi) and api_of_record(gem, "other", None) is None
    assert api_of_record({"api": "vertex", "base": "b"}, "k", None) is None
