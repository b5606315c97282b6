"""RedisStore failure behaviour: a dead, silent or full Redis gives a prompt StoreUnavailable, never a hang."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from gateway.stores import StoreCommandError, StoreUnavailable
from gateway.stores.redis import RedisStore, glob_escape


def _calls(store: RedisStore) -> list[Callable[[], Awaitable[object]]]:
    async def scan() -> list[str]:
        return [key async for key in store.scan("x")]

    return [
        lambda: store.get("x"), lambda: store.set("x", b"v", ttl=1, nx=True), lambda: store.delete("x", "y"),
        lambda: store.delete_if_equals("x", b"v"), lambda: store.expire("x", 1), lambda: store.ttl("x"),
        lambda: store.incr("x", 1, ttl=1), lambda: store.hincr("h", {"a": 1}), lambda: store.hset("h", {"a": 1}),
        lambda: store.hgetall("h"), lambda: store.sadd("s", "a"), lambda: store.srem("s", "a"),
        lambda: store.smembers("s"), lambda: store.log_append("l", [b"r"], 10), lambda: store.log_read("l", 1),
        scan, store.ping,
    ]


async def _all_fail_fast(store: RedisStore, bound: float) -> None:
    for call in _calls(store):
        t0 = time.perf_counter()
        with pytest.raises(StoreUnavailable):
            await call()
        assert time.perf_counter() - t0 < bound


def _recorded_writes(store: RedisStore) -> list[bytes]:
    """Every write on the store's pipelined connection from now on, as sent (its transport's `write`
    wrapped): a list that fills as the store writes."""
    conn = store._lean._conn  # type: ignore[union-attr]
    assert conn is not None and conn.transport is not None
    writes: list[bytes] = []
    write = conn.transport.write

    def recording(data: bytes) -> None:
        writes.append(data)
        write(data)

    conn.transport.write = recording  # type: ignore[method-assign]
    return writes


def _commands(writes: list[bytes]) -> list[int]:
    """The number of commands in each write."""
    return [data.count(b"\r\n*") + data.startswith(b"*") for data in writes]


async def test_commands_of_one_turn_share_one_write(own_redis) -> None:  # type: ignore[no-untyped-def]
    store = RedisStore(own_redis.url, timeout=0.5)
    try:
        await store.set("a", b"1")
        writes = _recorded_writes(store)
        got = await asyncio.gather(store.get("a"), store.get("b"), store.set("c", b"3", ttl=5, nx=True),
                                   store.set("a", b"x", nx=True), store.get("c"))
        assert got == [b"1", None, True, False, b"3"]  # each caller its own reply, in issue order
        assert _commands(writes) == [5]
        # A caller that gave up (its deadline, its client gone) leaves the others' replies intact.
        leader, quitter = asyncio.create_task(store.get("a")), asyncio.create_task(store.get("c"))
        await asyncio.sleep(0)
        quitter.cancel()
        assert await leader == b"1" and _commands(writes) == [5, 2]
        assert quitter.cancelled()
        assert await store.get("c") == b"3"
        assert await store.get_many(["a", "c", "none"]) == [b"1", b"3", None]
        assert await store.delete("a", "a", "c") == 2 and await store.get_many(["a", "c"]) == [None, None]
    finally:
        await store.close()


async def test_commands_of_one_turn_share_one_pipeline(own_redis) -> None:  # type: ignore[no-untyped-def]
    # A store on a redis-py client of the caller's (Sentinel's) batches GET and SET in pipelines.
    from redis.asyncio import Redis

    store = RedisStore(own_redis.url, timeout=0.5, client=Redis.from_url(own_redis.url))
    try:
        await store.set("a", b"1")
        sent: list[int] = []
        pipeline = store._r.pipeline

        def counting(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            pipe = pipeline(*args, **kwargs)  # type: ignore[arg-type]
            execute = pipe.execute

            async def run(*a: object, **k: object):  # type: ignore[no-untyped-def]
                sent.append(len(pipe.command_stack))
                return await execute(*a, **k)  # type: ignore[arg-type]

            pipe.execute = run  # type: ignore[method-assign]
            return pipe

        store._r.pipeline = counting  # type: ignore[method-assign]
        got = await asyncio.gather(store.get("a"), store.get("b"), store.set("c", b"3", ttl=5, nx=True),
                                   store.set("a", b"x", nx=True), store.get("c"))
        assert got == [b"1", None, True, False, b"3"]  # each caller its own reply, in issue order
        assert sent == [5]
        assert await store.get("a") == b"1" and sent == [5]  # alone in its turn: no pipeline
        # A caller that gave up (its deadline, its client gone) leaves the others' replies intact.
        leader, quitter = asyncio.create_task(store.get("a")), asyncio.create_task(store.get("c"))
        await asyncio.sleep(0)  # both joined the batch
        quitter.cancel()
        assert await leader == b"1" and sent == [5, 2]
        assert quitter.cancelled()
        assert await store.get("c") == b"3"
    finally:
        await store.close()


async def test_a_failed_batch_fails_each_of_its_callers_as_unavailable(own_redis) -> None:  # type: ignore[no-untyped-def]
    store = RedisStore(own_redis.url, timeout=0.2)
    try:
        own_redis.stop()
        results = await asyncio.gather(*(store.get(f"k{i}") for i in range(4)), return_exceptions=True)
        assert all(isinstance(r, StoreUnavailable) for r in results), results
    finally:
        own_redis.start()
        await store.close()


async def test_silent_redis_times_out_per_call(silent_redis_url: str) -> None:
    store = RedisStore(silent_redis_url, timeout=0.05)
    try:
        await _all_fail_fast(store, bound=0.5)
    finally:
        await store.close()


async def test_killed_redis_fails_fast_then_recovers(own_redis) -> None:  # type: ignore[no-untyped-def]
    store = RedisStore(own_redis.url, timeout=0.1)
    try:
        await store.set("k", b"v")
        own_redis.stop()
        await _all_fail_fast(store, bound=0.5)
        own_redis.start()
        assert await store.ping() is True  # the same pool reconnects by itself
        await store.set("k", b"w")
        assert await store.get("k") == b"w"
    finally:
        await store.close()


async def test_full_redis_is_a_command_error(own_redis) -> None:  # type: ignore[no-untyped-def]
    store = RedisStore(own_redis.url, timeout=0.5)
    admin = RedisStore(own_redis.url, timeout=2)
    try:
        await store.set("small", b"v")
        await admin._r.config_set("maxmemory-policy", "noeviction")
        await admin._r.config_set("maxmemory", "1")  # any write is over the limit now
        with pytest.raises(StoreCommandError, match="maxmemory"):
            await store.set("big", b"x" * 100_000)
        assert await store.get("small") == b"v"  # reads still work on a full Redis
    finally:
        await admin._r.config_set("maxmemory", "0")
        await store.close()
        await admin.close()


def test_glob_escape() -> None:
    assert glob_escape("gw:rc:{acme}:") == "gw:rc:{acme}:"
    assert glob_escape("a*b?[c]\\") == "a\\*b\\?\\[c\\]\\\\"


def test_batches_get_more_time_but_never_more_than_the_cap() -> None:
    store = RedisStore("redis://127.0.0.1:1/0", timeout=0.1, max_extra=1.0)
    assert store.deadline() == pytest.approx(0.1)
    assert store.deadline(501) == pytest.approx(0.2)  # 0.2 ms per extra item
    assert store.deadline(1_000_000) == pytest.approx(1.1)


async def test_stale_pooled_connections_after_a_restart_do_not_fail_calls(own_redis) -> None:  # type: ignore[no-untyped-def]
    store = RedisStore(own_redis.url, timeout=0.5)
    try:
        # eight pooled connections (through the client: the store's own GETs of one turn share one)
        await asyncio.gather(*(store._r.get(f"k{i}") for i in range(8)))
        assert len(store._r.connection_pool._available_connections) >= 2
        own_redis.stop()
        own_redis.start()  # every pooled connection is now dead
        for i in range(8):
            assert await store.get(f"k{i}") is None  # reconnects instead of failing
    finally:
        await store.close()


async def test_usage_writes_are_transactions_on_the_pipelined_connection(own_redis) -> None:  # type: ignore[no-untyped-def]
    """Hash increments and log appends go over the pipelined connection as MULTI … EXEC, several
    callers' transactions in one write, none interleaved; a command Redis refuses inside one fails it."""
    store = RedisStore(own_redis.url, timeout=0.5)
    try:
        await store.set("plain", b"v")
        writes = _recorded_writes(store)
        await asyncio.gather(store.hincr("h1", {"n": 2, "cost": 0.1}, ttl=60), store.hincr("h2", {"n": 1}),
                             store.log_append("log", [b"r1", b"r2", b"r3"], maxlen=2))
        assert len(writes) == 1 and writes[0].count(b"MULTI") == 3 and writes[0].count(b"EXEC") == 3
        await store.hincr("h1", {"n": 3, "cost": 0.2})
        assert await store.hgetall("h1") == {"n": "5", "cost": "0.3"}
        assert 0 < (await store.ttl("h1") or 0) <= 60 and await store.ttl("h2") is None
        assert await store.log_read("log", 10) == [b"r3", b"r2"]
        with pytest.raises(StoreCommandError):
            await store.hincr("plain", {"n": 1})  # a string key: WRONGTYPE inside the EXEC
        with pytest.raises(StoreCommandError):
            await store.log_append("h2", [b"r"], maxlen=5)
        assert await store.get("plain") == b"v" and await store.hgetall("h2") == {"n": "1"}
    finally:
        await store.close()
