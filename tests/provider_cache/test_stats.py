"""Re-use statistics in the shared store: counted, averaged, and empty (not an error) when the store fails."""

from __future__ import annotations

import pytest

from gateway.config import Settings
from gateway.provider_cache.stats import EMPTY, StatsStore
from gateway.stores import KVStore, open_store

from .conftest import free_port_url


async def test_sightings_and_moving_interval(kv: KVStore, tenant: str) -> None:
    now = [1000.0]
    stats = StatsStore(kv, clock=lambda: now[0])
    for gap in (10.0, 10.0, 40.0):
        seen = (await stats.read(tenant, "p1"))[0]
        stats.record(tenant, "p1", seen)
        await stats.drain()
        now[0] += gap
    s = (await stats.read(tenant, "p1"))[0]
    assert s.count == 3 and s.last_seen == 1020.0
    assert s.interval_s == pytest.approx(10.0)  # the 40 s gap is not seen until the next sighting
    stats.record(tenant, "p1", s)
    await stats.drain()
    assert (await stats.read(tenant, "p1"))[0].interval_s == pytest.approx(0.3 * 40 + 0.7 * 10)
    assert (await stats.read(tenant, "other"))[0] == EMPTY
    assert (await stats.read("another-tenant", "p1"))[0] == EMPTY


async def test_store_failure_gives_empty_statistics(tenant: str) -> None:
    dead = open_store(Settings(redis_url=free_port_url(), store_timeout=0.05))
    stats = StatsStore(dead, timeout_s=0.05)
    assert await stats.read(tenant, "a", "b") == [EMPTY, EMPTY]
    stats.record(tenant, "a", EMPTY)
    await stats.drain()  # the failed write is swallowed
    await dead.close()
