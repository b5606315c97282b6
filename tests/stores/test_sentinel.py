"""The Sentinel store on a real primary + replica + 3 Sentinels: URLs, passwords, failover.

The KVStore contract itself runs on Sentinel through the `store` fixture (conftest.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from gateway.config import Settings
from gateway.stores import StoreUnavailable, open_store
from gateway.stores.breaker import CircuitBreaker
from gateway.stores.sentinel import SentinelStore, parse_sentinel_url
from gateway_dev.redis_servers import RedisSentinelProcs, wait_until


def test_sentinel_urls() -> None:
    parsed, service, db = parse_sentinel_url(
        "redis+sentinel://:pw%2Fx@s1:26380,s2/mymaster/2?sentinel_password=spw")
    assert parsed.hosts == [("s1", 26380), ("s2", 26379)]
    assert (parsed.password, parsed.query["sentinel_password"], service, db) == ("pw/x", "spw", "mymaster", 2)
    assert parse_sentinel_url("redis+sentinel://s1/mymaster")[1:] == ("mymaster", 0)
    for bad in ("redis+sentinel://s1", "redis+sentinel://s1/m/x", "redis+sentinel://s1/m/0/extra", "redis://s1/m"):
        with pytest.raises(ValueError):
            parse_sentinel_url(bad)


def test_open_store_picks_the_sentinel_client() -> None:
    store = open_store(Settings(redis_url="redis+sentinel://127.0.0.1:1/mymaster/0"))
    assert isinstance(store, CircuitBreaker) and isinstance(store.inner, SentinelStore)


async def test_a_wrong_password_is_unavailable_not_a_crash(redis_sentinel: RedisSentinelProcs) -> None:
    url = redis_sentinel.url.replace(f":{redis_sentinel.password}@", ":wrong@")
    store = open_store(Settings(redis_url=url))
    with pytest.raises(StoreUnavailable):
        await store.get("k")
    await store.close()


@pytest.fixture
def own_sentinel() -> Iterator[RedisSentinelProcs]:
    with RedisSentinelProcs(password="fo-pw", down_after_ms=800) as setup:
        yield setup


async def test_primary_killed_fails_fast_then_the_promoted_replica_serves(own_sentinel: RedisSentinelProcs) -> None:
    store = open_store(Settings(redis_url=own_sentinel.url))
    try:
        assert await store.set("kept", b"before") is True
        with own_sentinel.primary.client() as r:  # the write reached the replica before the crash
            r.execute_command("WAIT", 1, 2000)
        own_sentinel.primary.stop()
        started = time.monotonic()
        failures = 0
        while True:  # misses (StoreUnavailable) until the Sentinels promote the replica
            try:
                value = await store.get("kept")
                break
            except StoreUnavailable:
                failures += 1
                assert time.monotonic() - started < 30, "no failover"
                await asyncio.sleep(0.05)
        assert failures > 0 and value == b"before"
        wait_until(lambda: own_sentinel.current_primary() == own_sentinel.replica.port, 10, "the Sentinels' view")
        assert await store.set("after", b"x") is True  # writes go to the new primary
        with own_sentinel.replica.client() as r:
            assert r.get("after") == b"x"
    finally:
        await store.close()
