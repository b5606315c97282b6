"""ResponseCacheStage against the embedded store and a real redis-server.

The upstream call is played by the test (it sets `ctx.answer` the way the handler does after a
complete upstream answer); the end-to-end suite does the same through the real app and emulators.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import zstandard

from gateway.answer import Answer, Finish, Start, TextDelta
from gateway.cache.key import entry_key
from gateway.cache.stage import EVENT_TAPS, ResponseCacheStage
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.metrics import REGISTRY
from gateway.pipeline import Hit
from gateway.stores import KVStore, open_store
from gateway.stores.breaker import CircuitBreaker
from gateway.stores.redis import RedisStore

from ._helpers import API_KEY, make_ctx, policy

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "What is 2+2?"}]}


def _answer(text: str = "4", finish: str = "stop") -> Answer:
    return Answer(text=text, model="gpt-4o-mini-2024-07-18", finish_reason=finish, provider="openai",
                  usage_raw={"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10})


async def _serve(stage: ResponseCacheStage, ctx: RequestContext, answer: Answer | None,
                 calls: list[str] | None = None) -> Hit | None:
    """One request: before(); on a miss the 'upstream' answers (or fails); then after()."""
    hit = await stage.before(ctx)
    if hit is None:
        if calls is not None:
            calls.append(ctx.request_id)
        if answer is not None:
            ctx.answer, ctx.answered_by = answer, "upstream"
        else:
            ctx.status, ctx.error = 500, "upstream status 500"
    else:
        ctx.answer = hit.answer
        ctx.answered_by = "response-cache" if hit.status == "response-hit" else "single-flight"
    await stage.after(ctx)
    return hit


async def _lookup(stage: ResponseCacheStage, ctx: RequestContext) -> Hit | None:
    """A request that only looks: before(), then after() as the handler always runs it."""
    hit = await stage.before(ctx)
    if hit is not None:
        ctx.answer = hit.answer
        ctx.answered_by = "response-cache" if hit.status == "response-hit" else "single-flight"
    await stage.after(ctx)
    return hit


def _lookups(result: str) -> float:
    return REGISTRY.get_sample_value("gateway_cache_lookups_total", {"layer": "response", "result": result}) or 0.0


async def test_hit_on_repeat(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    hits_before = _lookups("hit")
    first = make_ctx(dict(BODY), tenant=tenant)
    assert await _serve(stage, first, _answer()) is None
    assert first.cache_status == "miss"
    again = make_ctx(dict(BODY), tenant=tenant)
    hit = await stage.before(again)
    assert hit is not None and hit.status == "response-hit" and hit.answer == _answer()
    assert again.cache_status == "response-hit"
    assert again.record["saved_from"] == {"layer": "response", "usage_raw": _answer().usage_raw,
                                          "provider": "openai", "model": "gpt-4o-mini-2024-07-18"}
    assert _lookups("hit") - hits_before == 1
    await stage.after(again)
    assert await kv.ttl(entry_key(tenant, stage_digest(again))) == pytest.approx(3600, abs=2)


def stage_digest(ctx: RequestContext) -> str:
    return ctx.scratch["response_cache"].digest


async def test_stored_entry_never_holds_the_api_key(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    ctx = make_ctx(dict(BODY), tenant=tenant, headers={"authorization": f"Bearer {API_KEY}"})
    await _serve(stage, ctx, _answer())
    blob = await kv.get(entry_key(tenant, stage_digest(ctx)))
    assert blob is not None
    raw = zstandard.ZstdDecompressor().decompress(blob[1:])
    assert API_KEY.encode() not in raw and b"s3cr3t" not in raw and b"authorization" not in raw


async def test_tenant_isolation(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    await _serve(stage, make_ctx(dict(BODY), tenant=tenant), _answer("team A's answer"))
    other = tenant + "-b"
    assert await _lookup(stage, make_ctx(dict(BODY), tenant=other)) is None
    # Claiming the other tenant in the body changes nothing: identity comes from the key.
    sneaky = make_ctx({**BODY, "tenant": tenant, "user": tenant}, tenant=other)
    assert await _lookup(stage, sneaky) is None


async def test_user_scope(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    pol = policy(tenant, scope="user")
    await _serve(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol, user="alice"), _answer("alice's"))
    assert await _lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol, user="bob")) is None
    hit = await _lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol, user="alice"))
    assert hit is not None and hit.answer is not None and hit.answer.text == "alice's"
    anonymous = make_ctx(dict(BODY), tenant=tenant, pol=pol)
    assert await _lookup(stage, anonymous) is None
    assert anonymous.cache_status == "bypass"  # no user to scope by: not cached at all


async def test_no_cache_skips_lookup_but_stores_and_no_store_does_neither(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    await _serve(stage, make_ctx(dict(BODY), tenant=tenant), _answer("old"))
    fresh = make_ctx(dict(BODY), tenant=tenant, no_cache=True)
    assert await _serve(stage, fresh, _answer("new")) is None
    assert fresh.cache_status == "bypass"
    hit = await _lookup(stage, make_ctx(dict(BODY), tenant=tenant))
    assert hit is not None and hit.answer is not None and hit.answer.text == "new"

    body = {**BODY, "messages": [{"role": "user", "content": "secret"}]}
    private = make_ctx(body, tenant=tenant, no_store=True)
    assert await _serve(stage, private, _answer("private")) is None
    assert private.cache_status == "bypass"
    assert await _lookup(stage, make_ctx(body, tenant=tenant)) is None


async def test_ttl_expiry(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    pol = policy(tenant, ttl="0.3s")
    await _serve(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol), _answer())
    assert await _lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol)) is not None
    await asyncio.sleep(0.45)
    assert await _lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol)) is None


async def test_errors_cut_streams_and_borrowed_answers_are_not_stored(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    assert await _serve(stage, make_ctx(dict(BODY), tenant=tenant), None) is None  # upstream 500
    cut = make_ctx(dict(BODY), tenant=tenant, stream=True)
    assert await stage.before(cut) is None
    cut.error = "incomplete"  # the stream broke off: the handler never set ctx.answer
    await stage.after(cut)
    semantic = make_ctx(dict(BODY), tenant=tenant)
    assert await stage.before(semantic) is None
    semantic.answer, semantic.answered_by = _answer("close enough"), "semantic-cache"
    await stage.after(semantic)
    assert [key async for key in kv.scan(f"gw:rc:{{{tenant}}}:")] == []


async def test_truncated_answers_only_when_the_policy_says_so(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    await _serve(stage, make_ctx(dict(BODY), tenant=tenant), _answer("cut", finish="length"))
    assert await _lookup(stage, make_ctx(dict(BODY), tenant=tenant)) is None
    pol = policy(tenant, cache_truncated=True)
    await _serve(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol), _answer("cut", finish="length"))
    assert await _lookup(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol)) is not None
    await _serve(stage, make_ctx({**BODY, "seed": 1}, tenant=tenant), _answer("filtered", finish="content_filter"))
    assert await _lookup(stage, make_ctx({**BODY, "seed": 1}, tenant=tenant)) is None


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
    await _serve(stage, make_ctx(dict(BODY), tenant=tenant, pol=pol), _answer())
    ctx = make_ctx(dict(BODY), tenant=tenant, pol=pol)
    hit = await _lookup(stage, ctx)
    assert (hit is not None) is endpoint_ok
    assert ctx.cache_status == ("response-hit" if endpoint_ok else "bypass")


async def test_requests_a_replay_cannot_reproduce_bypass(tenant: str) -> None:
    stage = ResponseCacheStage(open_store(Settings()))
    body = {**BODY, "n": 3}
    await _serve(stage, make_ctx(body, tenant=tenant), _answer())
    ctx = make_ctx(body, tenant=tenant)
    assert await _lookup(stage, ctx) is None
    assert ctx.cache_status == "bypass" and ctx.record["response_cache_skip"] == "n > 1"


async def test_fail_open_when_redis_is_down(own_redis, tenant: str) -> None:  # type: ignore[no-untyped-def]
    store = CircuitBreaker(RedisStore(own_redis.url, timeout=0.1), threshold=3, cooldown=0.2)
    stage = ResponseCacheStage(store)
    try:
        await _serve(stage, make_ctx(dict(BODY), tenant=tenant), _answer())
        assert await _lookup(stage, make_ctx(dict(BODY), tenant=tenant)) is not None
        own_redis.stop()
        errors = _lookups("error")
        calls: list[str] = []
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        for _ in range(20):
            hit = await _serve(stage, make_ctx(dict(BODY), tenant=tenant), _answer(), calls)
            assert hit is None  # a plain miss: proxied
        assert len(calls) == 20
        assert loop.time() - t0 < 2  # never waiting on the dead Redis for long
        assert _lookups("error") - errors == 20
        own_redis.start()
        await asyncio.sleep(0.3)  # the breaker's cool-down
        await _serve(stage, make_ctx(dict(BODY), tenant=tenant), _answer())  # probe + store again
        assert await _lookup(stage, make_ctx(dict(BODY), tenant=tenant)) is not None
    finally:
        await store.close()


# ---- single-flight ----------------------------------------------------------------------------


async def _concurrent(stage: ResponseCacheStage, n: int, tenant: str, upstream_delay: float = 0.05,
                      fail_first: bool = False, stream: bool = False) -> tuple[list[str], list[Any]]:
    calls: list[str] = []

    async def one(i: int) -> Any:
        ctx = make_ctx(dict(BODY), tenant=tenant, stream=stream)
        hit = await stage.before(ctx)
        if hit is not None:
            if hit.answer is not None:
                return hit.answer.text
            assert hit.events is not None
            return "".join([e.text async for e in hit.events if isinstance(e, TextDelta)])
        calls.append(ctx.request_id)
        taps = ctx.scratch.get(EVENT_TAPS, [])
        for tap in taps:
            tap(Start(model="gpt-4o-mini"))
        for piece in ("two ", "plus ", "two"):
            await asyncio.sleep(upstream_delay / 3)
            for tap in taps:
                tap(TextDelta(piece))
        if fail_first and len(calls) == 1:
            ctx.error = "incomplete"
        else:
            for tap in taps:
                tap(Finish("stop", {}))
            ctx.answer, ctx.answered_by = _answer("two plus two"), "upstream"
        await stage.after(ctx)
        return "upstream"

    results = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    return calls, results


async def test_fifty_concurrent_identical_requests_make_one_upstream_call(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    calls, results = await _concurrent(stage, 50, tenant)
    assert len(calls) == 1
    assert sorted(results) == ["two plus two"] * 49 + ["upstream"]


async def test_stream_followers_ride_the_live_events(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    calls, results = await _concurrent(stage, 20, tenant, stream=True)
    assert len(calls) == 1
    assert sorted(results) == ["two plus two"] * 19 + ["upstream"]


async def test_followers_of_a_failed_leader_do_not_hang(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    calls, results = await asyncio.wait_for(_concurrent(stage, 10, tenant, fail_first=True), 5)
    assert len(calls) == 2  # the failed leader, then one follower that took over
    assert sorted(map(str, results)) == ["two plus two"] * 8 + ["upstream"] * 2


async def test_cross_replica_single_flight_through_redis(redis_server, tenant: str) -> None:  # type: ignore[no-untyped-def]
    stores = [open_store(Settings(redis_url=redis_server.url)) for _ in range(2)]
    replicas = [ResponseCacheStage(s) for s in stores]  # two gateway processes, one Redis
    calls: list[str] = []
    try:
        leader_ctx = make_ctx(dict(BODY), tenant=tenant)
        assert await replicas[0].before(leader_ctx) is None
        calls.append(leader_ctx.request_id)

        async def other_replica() -> Hit | None:
            return await replicas[1].before(make_ctx(dict(BODY), tenant=tenant))

        waiting = asyncio.create_task(other_replica())
        await asyncio.sleep(0.1)
        assert not waiting.done()  # it waits for replica 0's answer instead of calling upstream
        leader_ctx.answer, leader_ctx.answered_by = _answer("shared"), "upstream"
        await replicas[0].after(leader_ctx)
        hit = await asyncio.wait_for(waiting, 2)
        assert hit is not None and hit.answer is not None and hit.answer.text == "shared"
        assert len(calls) == 1
    finally:
        for s in stores:
            await s.close()


async def test_replica_whose_leader_failed_calls_upstream_itself(redis_server, tenant: str) -> None:  # type: ignore[no-untyped-def]
    stores = [open_store(Settings(redis_url=redis_server.url)) for _ in range(2)]
    replicas = [ResponseCacheStage(s) for s in stores]
    try:
        leader_ctx = make_ctx(dict(BODY), tenant=tenant)
        assert await replicas[0].before(leader_ctx) is None
        waiting = asyncio.create_task(replicas[1].before(make_ctx(dict(BODY), tenant=tenant)))
        await asyncio.sleep(0.05)
        leader_ctx.error = "incomplete"
        await replicas[0].after(leader_ctx)  # releases the lock without an entry
        assert await asyncio.wait_for(waiting, 2) is None  # goes upstream itself
    finally:
        for s in stores:
            await s.close()


async def test_purge_by_tenant(kv: KVStore, tenant: str) -> None:
    stage = ResponseCacheStage(kv)
    other = tenant + "x"
    for i in range(30):
        await _serve(stage, make_ctx({**BODY, "seed": i}, tenant=tenant), _answer())
    await _serve(stage, make_ctx(dict(BODY), tenant=other), _answer())
    assert await stage.purge(tenant) == 30
    assert await _lookup(stage, make_ctx({**BODY, "seed": 3}, tenant=tenant)) is None
    assert await _lookup(stage, make_ctx(dict(BODY), tenant=other)) is not None
    assert await stage.purge(tenant) == 0
    with pytest.raises(ValueError):
        await stage.purge("*")


async def test_leader_that_never_finishes_does_not_block_others(redis_server, tenant: str) -> None:  # type: ignore[no-untyped-def]
    """A request that vanished without its post-stage (a bug, a killed task): its followers are
    released when its context is collected, and its Redis lock is dropped by the keeper."""
    import gc

    store = open_store(Settings(redis_url=redis_server.url))
    stage = ResponseCacheStage(store, lock_ttl=0.3)
    try:
        lost = make_ctx(dict(BODY), tenant=tenant)
        assert await stage.before(lost) is None  # leads, and then never runs after()
        follower_ctx = make_ctx(dict(BODY), tenant=tenant)
        follower = asyncio.create_task(stage.before(follower_ctx))
        await asyncio.sleep(0.05)
        assert not follower.done()
        del lost
        gc.collect()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        assert await asyncio.wait_for(follower, 3) is None  # it leads now and goes upstream
        assert loop.time() - t0 < 1.0
        follower_ctx.answer, follower_ctx.answered_by = _answer(), "upstream"
        await stage.after(follower_ctx)
        assert await _lookup(stage, make_ctx(dict(BODY), tenant=tenant)) is not None
    finally:
        await store.close()


async def test_cancelled_leader_releases_its_followers(redis_server, tenant: str) -> None:  # type: ignore[no-untyped-def]
    from gateway.cache.key import cache_key, lock_key
    from gateway.cache.singleflight import ReplicaLock

    store = open_store(Settings(redis_url=redis_server.url))  # shared: replicas coordinate through it
    stage = ResponseCacheStage(store, max_wait=0.3)
    probe = make_ctx(dict(BODY), tenant=tenant)
    other_replica = ReplicaLock(store, lock_key(tenant, cache_key(probe, False)), ttl=5)
    assert await other_replica.acquire() is True  # another replica is calling upstream
    leader = asyncio.create_task(stage.before(make_ctx(dict(BODY), tenant=tenant)))
    await asyncio.sleep(0.02)
    follower_ctx = make_ctx(dict(BODY), tenant=tenant)
    follower = asyncio.create_task(stage.before(follower_ctx))
    await asyncio.sleep(0.02)
    leader.cancel()  # its client went away while it waited on the other replica
    with pytest.raises(asyncio.CancelledError):
        await leader
    assert await asyncio.wait_for(follower, 2) is None  # released: it went on as its own request
    await stage.after(follower_ctx)
    await other_replica.release()
    await store.close()


async def test_embedded_store_takes_no_replica_lock(tenant: str) -> None:
    # The embedded store is one process's own: a cross-replica lock in it would coordinate nobody.
    store = open_store(Settings())
    assert not store.shared
    stage = ResponseCacheStage(store)
    ctx = make_ctx(dict(BODY), tenant=tenant)
    assert await stage.before(ctx) is None
    assert ctx.scratch[stage.name].lock is None
    await stage.after(ctx)


async def test_stream_follower_of_a_leader_that_breaks_mid_stream_ends_without_finish(tenant: str) -> None:
    stage = ResponseCacheStage(open_store(Settings()))
    leader = make_ctx(dict(BODY), tenant=tenant, stream=True)
    assert await stage.before(leader) is None
    for tap in leader.scratch[EVENT_TAPS]:
        tap(Start(model="gpt-4o-mini"))
        tap(TextDelta("two "))
    follower_ctx = make_ctx(dict(BODY), tenant=tenant, stream=True)
    hit = await stage.before(follower_ctx)
    assert hit is not None and hit.status == "miss" and hit.events is not None
    got = []

    async def read() -> None:
        async for event in hit.events:  # type: ignore[union-attr]
            got.append(event)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0.01)
    leader.error = "incomplete"  # the upstream stream was cut
    await stage.after(leader)
    await asyncio.wait_for(reader, 1)  # ends, without raising into the handler
    assert got == [Start(model="gpt-4o-mini"), TextDelta("two ")]
    assert "saved_from" not in follower_ctx.record


async def test_full_redis_fails_open_and_still_serves_what_it_has(own_redis, tenant: str) -> None:  # type: ignore[no-untyped-def]
    store = open_store(Settings(redis_url=own_redis.url))
    stage = ResponseCacheStage(store)
    admin = RedisStore(own_redis.url, timeout=2)
    try:
        await _serve(stage, make_ctx(dict(BODY), tenant=tenant), _answer("stored before"))
        await admin._r.config_set("maxmemory", "1")  # full: every write is refused (OOM)
        other = {**BODY, "seed": 42}
        calls: list[str] = []
        for _ in range(3):
            assert await _serve(stage, make_ctx(other, tenant=tenant), _answer(), calls) is None
        assert len(calls) == 3  # not stored, each went upstream, none failed
        hit = await _lookup(stage, make_ctx(dict(BODY), tenant=tenant))
        assert hit is not None and hit.answer is not None and hit.answer.text == "stored before"
    finally:
        await admin._r.config_set("maxmemory", "0")
        await admin.close()
        await store.close()
