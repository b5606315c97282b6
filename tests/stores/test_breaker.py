"""CircuitBreaker around a real RedisStore: opens on repeated failures, fails fast, recovers."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway.metrics import REGISTRY
from gateway.stores import StoreCommandError, StoreUnavailable
from gateway.stores.breaker import CLOSED, OPEN, CircuitBreaker
from gateway.stores.redis import RedisStore


def _errors(kind: str) -> float:
    return REGISTRY.get_sample_value("gateway_store_errors_total", {"store": "redis", "kind": kind}) or 0.0


async def test_opens_after_threshold_and_then_costs_nothing(silent_redis_url: str) -> None:
    store = CircuitBreaker(RedisStore(silent_redis_url, timeout=0.05), threshold=3, cooldown=30)
    timeouts, refused = _errors("timeout"), _errors("open")
    try:
        for _ in range(3):
            with pytest.raises(StoreUnavailable):
                await store.get("k")  # each waits for the 50 ms timeout
        assert store.state == OPEN
        t0 = time.perf_counter()
        for _ in range(100):
            with pytest.raises(StoreUnavailable, match="circuit breaker is open"):
                await store.get("k")
        assert time.perf_counter() - t0 < 0.05  # 100 refusals without touching the socket
        assert await store.ping() is False
        assert _errors("timeout") - timeouts == 3
        assert _errors("open") - refused == 101
    finally:
        await store.close()


async def test_half_open_probe_closes_after_restart(own_redis) -> None:  # type: ignore[no-untyped-def]
    store = CircuitBreaker(RedisStore(own_redis.url, timeout=0.1), threshold=2, cooldown=0.2)
    try:
        await store.set("k", b"v", ttl=60)
        own_redis.stop()
        for _ in range(2):
            with pytest.raises(StoreUnavailable):
                await store.get("k")
        assert store.state == OPEN
        await asyncio.sleep(0.25)
        with pytest.raises(StoreUnavailable):
            await store.get("k")  # the probe fails: open again for a cool-down
        assert store.state == OPEN
        with pytest.raises(StoreUnavailable, match="open"):
            await store.get("k")
        own_redis.start()
        await asyncio.sleep(0.25)
        assert await store.set("k", b"back") is True  # the probe succeeds
        assert store.state == CLOSED
        assert await store.get("k") == b"back"
    finally:
        await store.close()


async def test_only_one_probe_while_half_open(silent_redis_url: str) -> None:
    store = CircuitBreaker(RedisStore(silent_redis_url, timeout=0.2), threshold=1, cooldown=0.05)
    try:
        with pytest.raises(StoreUnavailable):
            await store.get("k")
        await asyncio.sleep(0.06)
        started = time.perf_counter()
        results = await asyncio.gather(*(store.get("k") for _ in range(20)), return_exceptions=True)
        assert all(isinstance(r, StoreUnavailable) for r in results)
        refused = [r for r in results if "circuit breaker is open" in str(r)]
        assert len(refused) == 19  # one probe went to the socket, the others were refused at once
        assert time.perf_counter() - started < 0.5
    finally:
        await store.close()


async def test_command_errors_do_not_open_the_breaker(own_redis) -> None:  # type: ignore[no-untyped-def]
    store = CircuitBreaker(RedisStore(own_redis.url, timeout=0.5), threshold=2, cooldown=30)
    admin = RedisStore(own_redis.url, timeout=2)
    try:
        await store.set("small", b"v")
        await admin._r.config_set("maxmemory", "1")
        for _ in range(5):
            with pytest.raises(StoreCommandError):
                await store.set("big", b"x" * 10_000)
        assert store.state == CLOSED
        assert await store.get("small") == b"v"
    finally:
        await admin._r.config_set("maxmemory", "0")
        await store.close()
        await admin.close()


async def test_no_free_connection_is_busy_and_leaves_the_breaker_alone(redis_server) -> None:  # type: ignore[no-untyped-def]
    from gateway.stores import StoreBusy

    inner = RedisStore(redis_server.url, timeout=1.0, max_connections=2)
    store = CircuitBreaker(inner, threshold=1, cooldown=30)
    try:
        # Two calls wait on the request path's connection (BLPOP waits server-side): with
        # `max_connections` calls in flight, a third is refused at once.
        blockers = [asyncio.create_task(inner._call(lambda: inner._send(("BLPOP", "busy:none", 0.3))))
                    for _ in range(2)]
        await asyncio.sleep(0.05)
        busy = _errors("busy")
        with pytest.raises(StoreBusy):
            await store.get("k")
        assert store.state == CLOSED  # not a failure of Redis
        assert _errors("busy") - busy == 1
        await asyncio.gather(*blockers)
        assert await store.get("k") is None  # connections back: works
    finally:
        await store.close()
