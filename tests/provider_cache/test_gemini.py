"""Gemini CachedContent lifecycle against the Gemini emulator: created once (also under concurrency),
referenced, extended while hot, remembered when refused, purged upstream."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from gateway.provider_cache import gemini
from gateway.provider_cache.tables import min_tokens
from gateway.provider_cache.tokens import TokenCounter
from gateway.stores import KVStore
from gateway_dev.emulators import EmulatorSet

MODEL = "gemini-2.5-flash"
KEY = "AIza-test-key"
SYSTEM = "You answer questions about the Acme handbook. " + " ".join(
    f"Rule {i}: items may be returned within {i + 10} days with a receipt." for i in range(220))


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    c = TokenCounter()
    assert c.load()
    return c


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def body(system: str = SYSTEM, first_user: str = "q") -> dict[str, Any]:
    return {"systemInstruction": {"parts": [{"text": system}]},
            "tools": [{"functionDeclarations": [{"name": "lookup", "description": "find an order",
                                                 "parameters": {"type": "object"}}]}],
            "contents": [{"role": "user", "parts": [{"text": first_user}]},
                         {"role": "model", "parts": [{"text": "a"}]},
                         {"role": "user", "parts": [{"text": "final"}]}]}


def prefix_of(b: dict[str, Any], counter: TokenCounter) -> gemini.Prefix:
    p, _ = gemini.choose_prefix(b, MODEL, gemini.key_fingerprint(KEY), 2, min_tokens("gemini", MODEL), counter)
    assert p is not None
    return p


def test_choose_prefix(counter: TokenCounter) -> None:
    p = prefix_of(body(), counter)
    assert p.leading == 0 and set(p.parts) == {"systemInstruction", "tools"}
    # short instructions: the first user turn (a long document) joins them
    small = body(system="Be brief.", first_user="Document: " + "clause " * 3000)
    p2 = prefix_of(small, counter)
    assert p2.leading == 1 and p2.parts["contents"] == small["contents"][:1]
    assert gemini.choose_prefix(body(system="Be brief."), MODEL, "fp", 2, 2048, counter)[0] is None
    # the identity differs per upstream key
    other, _ = gemini.choose_prefix(body(), MODEL, gemini.key_fingerprint("other"), 2, 2048, counter)
    assert other is not None and other.cache_id != p.cache_id


def test_reference_moves_what_the_api_requires(counter: TokenCounter) -> None:
    b = {**body(), "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}
    p = prefix_of(b, counter)
    out = gemini.reference(b, p, "cachedContents/x")
    assert out["cachedContent"] == "cachedContents/x"
    assert not {"systemInstruction", "tools", "toolConfig"} & set(out)
    assert out["contents"] == b["contents"]
    assert gemini.v1beta_path("/v1/models/m:generateContent") == "/v1beta/models/m:generateContent"


async def test_created_once_even_when_requests_race(emu: EmulatorSet, kv: KVStore, tenant: str,
                                                    session: aiohttp.ClientSession, counter: TokenCounter) -> None:
    caches = gemini.GeminiCaches(kv, lambda: session)
    p = prefix_of(body(), counter)
    results = await asyncio.gather(*(caches.create(tenant, p, MODEL, emu.gemini_base_url, KEY, 3600) for _ in range(6)))
    outcomes = sorted(o for _, o in results)
    assert outcomes.count("created") == 1 and emu.calls("gemini.cachedContents.create") == 1
    assert set(outcomes) <= {"created", "locked", "reused"}
    handle = await caches.handle(tenant, p)
    assert handle is not None and handle["name"].startswith("cachedContents/")
    assert handle["tokens"] >= 2048
    # later: found in the store, no upstream LIST, no second create
    assert (await caches.create(tenant, p, MODEL, emu.gemini_base_url, KEY, 3600))[1] == "reused"
    assert emu.calls("gemini.cachedContents.create") == 1 and emu.calls("gemini.cachedContents.list") == 0
    # the emulator saw a deterministic display name from the prefix hash
    created = emu.requests("gemini.cachedContents.create")[0]
    assert created.body["displayName"] == f"gw-{p.cache_id[:24]}"


async def test_extended_in_the_second_half_of_its_life(emu: EmulatorSet, kv: KVStore, tenant: str,
                                                       session: aiohttp.ClientSession, counter: TokenCounter) -> None:
    offset = emu.clock.now() - time.time()  # the emulator's clock may have been moved by other tests
    caches = gemini.GeminiCaches(kv, lambda: session, clock=lambda: time.time() + offset)
    p = prefix_of(body(), counter)
    handle, _ = await caches.create(tenant, p, MODEL, emu.gemini_base_url, KEY, 600)
    assert handle is not None
    _, hours = await caches.extend(tenant, p, handle, KEY, 600)
    assert hours == 0 and emu.calls("gemini.cachedContents.patch") == 0
    # 400 s later, on both clocks: 200 s left of 600, so it is renewed to 600 s from now
    emu.clock.advance(400)
    later = gemini.GeminiCaches(kv, lambda: session, clock=lambda: time.time() + offset + 400)
    renewed, hours = await later.extend(tenant, p, handle, KEY, 600)
    assert emu.calls("gemini.cachedContents.patch") == 1
    assert renewed is not None and hours == pytest.approx(400 / 3600, abs=0.01)
    assert renewed["expire"] == pytest.approx(handle["expire"] + 400, abs=5)
    assert (await later.handle(tenant, p))["expire"] == renewed["expire"]  # type: ignore[index]
    # one extension per period across replicas
    await later.extend(tenant, p, handle, KEY, 600)
    assert emu.calls("gemini.cachedContents.patch") == 1


async def test_a_refused_creation_is_remembered(emu: EmulatorSet, kv: KVStore, tenant: str,
                                                session: aiohttp.ClientSession, counter: TokenCounter) -> None:
    caches = gemini.GeminiCaches(kv, lambda: session)
    small = body(system="Short. " * 40)
    p, _ = gemini.choose_prefix(small, MODEL, "fp", 2, 64, counter)  # our minimum is lower than the vendor's
    assert p is not None
    assert (await caches.create(tenant, p, MODEL, emu.gemini_base_url, KEY, 600))[1] == "failed"
    assert (await caches.create(tenant, p, MODEL, emu.gemini_base_url, KEY, 600))[1] == "failed"
    assert emu.calls("gemini.cachedContents.create") == 1


async def test_purge_deletes_upstream_and_handles(emu: EmulatorSet, kv: KVStore, tenant: str,
                                                  session: aiohttp.ClientSession, counter: TokenCounter) -> None:
    caches = gemini.GeminiCaches(kv, lambda: session)
    p = prefix_of(body(), counter)
    handle, _ = await caches.create(tenant, p, MODEL, emu.gemini_base_url, KEY, 600)
    assert handle is not None and len(emu.vendors.gemini.caches.list(KEY)) == 1
    assert await caches.purge(tenant, KEY) == 1
    assert emu.calls("gemini.cachedContents.delete") == 1 and emu.vendors.gemini.caches.list(KEY) == []
    assert await caches.handle(tenant, p) is None
    assert await caches.purge(tenant, KEY) == 0
