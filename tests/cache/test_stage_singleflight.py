"""ResponseCacheStage's single-flight: followers inside one process ride the leader's flight, other
replicas wait on the leader's lock in Redis; a failed, stalled or cancelled leader releases them all."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gateway.answer import Finish, Start, TextDelta
from gateway.cache.stage import ResponseCacheStage
from gateway.config import Settings
from gateway.pipeline import Hit
from gateway.stores import KVStore, open_store

from ._helpers import BODY, answer, lookup, make_ctx


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
        taps = [stage] if stage.listens(ctx) else []  # as the pipeline dispatches `on_event`
        for tap in taps:
            tap.on_event(ctx, Start(model="gpt-4o-mini"))
        for piece in ("two ", "plus ", "two"):
            await asyncio.sleep(upstream_delay / 3)
            for tap in taps:
                tap.on_event(ctx, TextDelta(piece))
        if fail_first and len(calls) == 1:
            ctx.error = "incomplete"
        else:
            for tap in taps:
                tap.on_event(ctx, Finish("stop", {}))
            ctx.answer, ctx.answered_by = answer("two plus two"), "upstream"
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
        leader_ctx.answer, leader_ctx.answered_by = answer("shared"), "upstream"
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
        follower_ctx.answer, follower_ctx.answered_by = answer(), "upstream"
        await stage.after(follower_ctx)
        assert await lookup(stage, make_ctx(dict(BODY), tenant=tenant)) is not None
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


async def _stream_leader(stage: ResponseCacheStage, tenant: str, *events: Any) -> Any:
    """A streaming request that leads its flight, with `events` of its upstream answer already in."""
    leader = make_ctx(dict(BODY), tenant=tenant, stream=True)
    assert await stage.before(leader) is None
    assert stage.listens(leader)
    for event in events:
        stage.on_event(leader, event)
    return leader


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
    leader = await _stream_leader(stage, tenant, Start(model="gpt-4o-mini"), TextDelta("two "))
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


async def test_a_leader_that_ends_without_an_answer_releases_its_flight_at_once(tenant: str) -> None:
    # The request's post-stages run later in the background; a request arriving in between must not
    # join (and replay the first events of) a flight whose leader is already gone.
    stage = ResponseCacheStage(open_store(Settings()))
    leader = await _stream_leader(stage, tenant, Start(model="gpt-4o-mini"), TextDelta("two "))
    assert stage.keeps_upstream(leader) is False  # nobody rides on it yet
    stage.on_abandoned(leader)  # what the pipeline dispatches when the stream is cut
    newcomer = make_ctx(dict(BODY), tenant=tenant, stream=True)
    assert await stage.before(newcomer) is None  # it leads a new flight instead
    await stage.after(leader)  # the late post-stage finds nothing left to release
    assert len(stage.flights) == 1
    await stage.after(newcomer)
    assert len(stage.flights) == 0


async def test_a_flight_with_followers_is_wanted(tenant: str) -> None:
    stage = ResponseCacheStage(open_store(Settings()))
    leader = await _stream_leader(stage, tenant, Start(model="gpt-4o-mini"))
    follower = asyncio.create_task(stage.before(make_ctx(dict(BODY), tenant=tenant, stream=True)))
    await asyncio.sleep(0.01)
    assert stage.keeps_upstream(leader) is True
    leader.error = "incomplete"
    await stage.after(leader)
    assert stage.keeps_upstream(leader) is False  # done: nothing left to read for
    hit = await follower
    assert hit is not None and hit.events is not None
    assert [e async for e in hit.events] == [Start(model="gpt-4o-mini")]
