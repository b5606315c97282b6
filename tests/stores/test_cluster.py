"""The Redis Cluster store on a real 3-primary cluster: what differs from one Redis.

The KVStore contract itself runs on the cluster through the `store` fixture (conftest.py); here:
URLs, placement, the per-primary circuit breakers with a primary killed and restarted, and a
cluster that is down when the gateway starts.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
from redis.crc import key_slot

from gateway.config import Settings
from gateway.stores import StoreUnavailable, open_store
from gateway.stores.breaker import OPEN
from gateway.stores.cluster import ClusterStore, NodeBreakers, parse_cluster_url, prefix_slot
from gateway_dev.localrun import free_port
from gateway_dev.redis_servers import RedisClusterProcs


def test_cluster_urls() -> None:
    parsed = parse_cluster_url("redis+cluster://user:p%40ss@10.0.0.1:7000,10.0.0.2,[::1]:7002")
    assert parsed.hosts == [("10.0.0.1", 7000), ("10.0.0.2", 6379), ("::1", 7002)]
    assert (parsed.username, parsed.password, parsed.tls) == ("user", "p@ss", False)
    assert parse_cluster_url("rediss+cluster://h:1/0").tls
    for bad in ("redis+cluster://h:1/3", "redis+cluster://", "redis+cluster://h:notaport", "redis://h:1"):
        with pytest.raises(ValueError):
            parse_cluster_url(bad)
    with pytest.raises(ValueError) as err:
        parse_cluster_url("redis+cluster://u:secret@h:1/2")
    assert "secret" not in str(err.value)


def test_a_tagged_prefix_lives_in_one_slot() -> None:
    assert prefix_slot("gw:rc:{acme}:") == key_slot(b"{acme}") == key_slot(b"gw:rc:{acme}:0123")
    assert prefix_slot("usage:{acme}:agg") == key_slot(b"acme")
    for untagged in ("gw:rc:", "gw:rc:{acme", "x:{}:y"):
        assert prefix_slot(untagged) is None


def test_open_store_picks_the_cluster_client() -> None:
    store = open_store(Settings(redis_url="redis+cluster://127.0.0.1:1,127.0.0.1:2", store_timeout="50ms"))
    assert isinstance(store, NodeBreakers) and isinstance(store.inner, ClusterStore)
    assert store.inner.timeout == 0.05 and store.inner.atomic is False


async def test_a_cluster_down_at_start_fails_fast_as_unavailable() -> None:
    ports = [free_port() for _ in range(3)]
    store = open_store(Settings(redis_url="redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports)))
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        await store.get("k")
    assert time.monotonic() - started < 1.5  # refused at once, never a hang
    assert await store.ping() is False
    await store.close()


@pytest.fixture
def own_cluster() -> Iterator[RedisClusterProcs]:
    with RedisClusterProcs(masters=3, node_timeout_ms=1000) as cluster:
        yield cluster


async def test_a_dead_primary_fails_only_its_slots_and_recovers_when_it_returns(
        own_cluster: RedisClusterProcs) -> None:
    store = open_store(Settings(redis_url=own_cluster.url))
    assert isinstance(store, NodeBreakers)
    victim = own_cluster.primary_of("gw:rc:{acme}:x")
    tag = next(t for t in (f"t{i}" for i in range(50)) if own_cluster.primary_of(f"{{{t}}}") is not victim)
    doomed, spared = f"gw:rc:{{acme}}:{uuid.uuid4().hex}", f"gw:rc:{{{tag}}}:{uuid.uuid4().hex}"
    try:
        await store.set(doomed, b"1")
        await store.set(spared, b"2")
        victim.stop()
        for _ in range(8):  # the victim's breaker opens after a few failures; each fails fast
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                await store.get(doomed)
            assert time.monotonic() - started < 1.5
        assert store.breaker(doomed).state == OPEN
        assert await store.get(spared) == b"2"  # other primaries: untouched
        assert await store.set(spared, b"3") is True
        assert store.breaker(spared).state != OPEN
        with pytest.raises(StoreUnavailable):  # a purge-like scan of the dead node's tenant fails loudly
            _ = [key async for key in store.scan("gw:rc:{acme}:")]

        victim.start()  # same port and nodes.conf: it rejoins owning the same slots (empty: no persistence)
        own_cluster.wait_healthy(30)
        deadline = time.monotonic() + 15
        while True:
            try:
                assert await store.get(doomed) is None
                break
            except StoreUnavailable:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)  # until the breaker's probe gets through
        assert await store.set(doomed, b"4") is True and await store.get(doomed) == b"4"
    finally:
        await store.close()
