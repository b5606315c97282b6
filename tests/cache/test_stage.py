"""ResponseCacheStage against the embedded store and a real redis-server.

The upstream call is played by the test (it sets `ctx.answer` the way the handler does after a
complete upstream answer); the end-to-end suite does the same through the real app and emulators.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import zstandard

from gateway.cache import entry as entries
from gateway.cache.key import entry_key
from gateway.cache.stage import ResponseCacheStage
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.metrics import REGISTRY
from gateway.stores import KVStore, open_store
from gateway.stores.breaker import CircuitBreaker
from gateway.stores.redis import RedisStore

from ._helpers import API_KEY, BODY, answer, lookup, make_ctx, policy, serve


def _lookups(result: str) -> float:
    return REGISTRY.get_sample_value("gateway_cache_lookups_total", {"layer": "response", "result": result}) or 0.0


async def test_hit_on_repeat(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    hits_before = _lookups("hit")
    first = make_ctx(dict(BODY), tenant=tenant)
    assert await serve(stage, first, answer()) is None
    assert first.cache_status == "miss"
    again = make_ctx(dict(BODY), tenant=tenant)
    hit = await stage.before(again)
    assert hit is not None and hit.status == "response-hit" and hit.answer == answer()
    assert again.cache_status == "response-hit"
    assert again.record["saved_from"] == {"layer": "response", "usage_raw": answer().usage_raw,
                                          "provider": "openai", "model": "gpt-4o-mini-2024-07-18"}
    assert _lookups("hit") - hits_before == 1
    await stage.after(again)
    assert await kv.ttl(entry_key(tenant, stage_digest(again))) == pytest.approx(3600, abs=2)


def stage_digest(ctx: RequestContext) -> str:
    return ctx.scratch["response_cache"].digest


async def test_stored_entry_never_holds_the_api_key(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    ctx = make_ctx(dict(BODY), tenant=tenant, headers={"authorization": f"Bearer {API_KEY}"})
    await serve(stage, ctx, answer())
    blob = await kv.get(entry_key(tenant, stage_digest(ctx)))
    assert blob is not None
    raw = blob[1:] if blob[:1] == entries.VERSION_PLAIN else zstandard.ZstdDecompressor().decompress(blob[1:])
    assert API_KEY.encode() not in raw and b"s3cr3t" not in raw and b"authorization" not in raw


async def test_tenant_isolation(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    await serve(stage, make_ctx(dict(BODY), tenant=tenant), answer("team A's answer"))
    other = tenant + "-b"
    assert await lookup(stage, make_ctx(dict(BODY), tenant=other)) is None
    # Claiming the other tenant in the body changes nothing: identity comes from the key.
    sneaky = make_ctx({**BODY, "tenant": tenant, "user": tenant}, tenant=other)
    assert await lookup(stage, sneaky) is None


async def test_user_scope(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    pol = policy(tenant, scope="user")
    await serve(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol, user="alice"), answer("alice's"))
    assert await lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol, user="bob")) is None
    hit = await lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol, user="alice"))
    assert hit is not None and hit.answer is not None and hit.answer.text == "alice's"
    anonymous = make_ctx(dict(BODY), tenant=tenant, pol=pol)
    assert await lookup(stage, anonymous) is None
    assert anonymous.cache_status == "bypass"  # no user to scope by: not cached at all


async def test_no_cache_skips_lookup_but_stores_and_no_store_does_neither(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    await serve(stage, make_ctx(dict(BODY), tenant=tenant), answer("old"))
    fresh = make_ctx(dict(BODY), tenant=tenant, no_cache=True)
    assert await serve(stage, fresh, answer("new")) is None
    assert fresh.cache_status == "bypass"
    hit = await lookup(stage, make_ctx(dict(BODY), tenant=tenant))
    assert hit is not None and hit.answer is not None and hit.answer.text == "new"

    body = {**BODY, "messages": [{"role": "user", "content": "secret"}]}
    private = make_ctx(body, tenant=tenant, no_store=True)
    assert await serve(stage, private, answer("private")) is None
    assert private.cache_status == "bypass"
    assert await lookup(stage, make_ctx(body, tenant=tenant)) is None


async def test_ttl_expiry(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    pol = policy(tenant, ttl="0.3s")
    await serve(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol), answer())
    assert await lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol)) is not None
    await asyncio.sleep(0.45)
    assert await lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol)) is None


async def test_errors_cut_streams_and_borrowed_answers_are_not_stored(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    assert await serve(stage, make_ctx(dict(BODY), tenant=tenant), None) is None  # upstream 500
    cut = make_ctx(dict(BODY), tenant=tenant, stream=True)
    assert await stage.before(cut) is None
    cut.error = "incomplete"  # the stream broke off: the handler never set ctx.answer
    await stage.after(cut)
    semantic = make_ctx(dict(BODY), tenant=tenant)
    assert await stage.before(semantic) is None
    semantic.answer, semantic.answered_by = answer("close enough"), "semantic-cache"
    await stage.after(semantic)
    assert [key async for key in kv.scan(f"gw:rc:{{{tenant}}}:")] == []


async def test_truncated_answers_only_when_the_policy_says_so(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    await serve(stage, make_ctx(dict(BODY), tenant=tenant), answer("cut", finish="length"))
    assert await lookup(stage, make_ctx(dict(BODY), tenant=tenant)) is None
    pol = policy(tenant, cache_truncated=True)
    await serve(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol), answer("cut", finish="length"))
    assert await lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol)) is not None
    await serve(stage, make_ctx({**BODY, "seed": 1}, tenant=tenant), answer("filtered", finish="content_filter"))
    assert await lookup(stage, make_ctx({**BODY, "seed": 1}, tenant=tenant)) is None


@pytest.mark.parametrize(("rules", "model", "endpoint_ok"), [
    ({"enabled": False}, "gpt-4o-mini", False),
    ({"models": ["claude-*"]}, "gpt-4o-mini", False),
    ({"exclude_models": ["gpt-4o*"]}, "gpt-4o-mini", False),
    ({"routes": ["messages"]}, "gpt-4o-mini", False),
    ({"models": ["gpt-*"], "routes": ["chat"]}, "gpt-4o-mini", True),
])
async def test_per_model_and_route_enablement(rules: dict[str, Any], model: str, endpoint_ok: bool,
                                              tenant: str) -> None:
    stage = ResponseCacheStage(open_store(Settings()))
    pol = policy(tenant, **rules)
    await serve(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol), answer())
    ctx = make_ctx(dict(BODY), tenant=tenant, pol=pol)
    hit = await lookup(stage, ctx)
    assert (hit is not None) is endpoint_ok
    assert ctx.cache_status == ("response-hit" if endpoint_ok else "bypass")


async def test_requests_a_replay_cannot_reproduce_bypass(tenant: str) -> None:
    stage = ResponseCacheStage(open_store(Settings()))
    body = {**BODY, "n": 3}
    await serve(stage, make_ctx(body, tenant=tenant), answer())
    ctx = make_ctx(body, tenant=tenant)
    assert await lookup(stage, ctx) is None
    assert ctx.cache_status == "bypass" and ctx.record["response_cache_skip"] == "n > 1"


async def test_fail_open_when_redis_is_down(own_redis, tenant: str) -> None:  # type: ignore[no-untyped-def]
    store = CircuitBreaker(RedisStore(own_redis.url, timeout=0.1), threshold=3, cooldown=0.2)
    stage = ResponseCacheStage(store)
    try:
        await serve(stage, make_ctx(dict(BODY), tenant=tenant), answer())
        assert await lookup(stage, make_ctx(dict(BODY), tenant=tenant)) is not None
        own_redis.stop()
        errors = _lookups("error")
        calls: list[str] = []
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        for _ in range(20):
            hit = await serve(stage, make_ctx(dict(BODY), tenant=tenant), answer(), calls)
            assert hit is None  # a plain miss: proxied
        assert len(calls) == 20
        assert loop.time() - t0 < 2  # never waiting on the dead Redis for long
        assert _lookups("error") - errors == 20
        own_redis.start()
        await asyncio.sleep(0.3)  # the breaker's cool-down
        await serve(stage, make_ctx(dict(BODY), tenant=tenant), answer())  # probe + store again
        assert await lookup(stage, make_ctx(dict(BODY), tenant=tenant)) is not None
    finally:
        await store.close()


# ---- single-flight ----------------------------------------------------------------------------


async def test_purge_by_tenant(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    other = tenant + "x"
    for i in range(30):
        await serve(stage, make_ctx({**BODY, "seed": i}, tenant=tenant), answer())
    await serve(stage, make_ctx(dict(BODY), tenant=other), answer())
    assert await stage.purge(tenant) == 30
    assert await lookup(stage, make_ctx({**BODY, "seed": 3}, tenant=tenant)) is None
    assert await lookup(stage, make_ctx(dict(BODY), tenant=other)) is not None
    assert await stage.purge(tenant) == 0
    with pytest.raises(ValueError):
        await stage.purge("*")


async def test_full_redis_fails_open_and_still_serves_what_it_has(own_redis, tenant: str) -> None:  # type: ignore[no-untyped-def]
    store = open_store(Settings(redis_url=own_redis.url))
    stage = ResponseCacheStage(store)
    admin = RedisStore(own_redis.url, timeout=2)
    try:
        await serve(stage, make_ctx(dict(BODY), tenant=tenant), answer("stored before"))
        await admin._r.config_set("maxmemory", "1")  # full: every write is refused (OOM)
        other = {**BODY, "seed": 42}
        calls: list[str] = []
        for _ in range(3):
            assert await serve(stage, make_ctx(other, tenant=tenant), answer(), calls) is None
        assert len(calls) == 3  # not stored, each went upstream, none failed
        hit = await lookup(stage, make_ctx(dict(BODY), tenant=tenant))
        assert hit is not None and hit.answer is not None and hit.answer.text == "stored before"
    finally:
        await admin._r.config_set("maxmemory", "0")
        await admin.close()
        await store.close()
