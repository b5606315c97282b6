"""`open_store`: the embedded store without `redis_url`, else Redis behind a breaker; no I/O at open."""

from __future__ import annotations

from gateway.config import Settings
from gateway.stores import open_store
from gateway.stores.breaker import CircuitBreaker
from gateway.stores.memory import MemoryStore
from gateway.stores.redis import RedisStore


def test_embedded_store_when_redis_is_not_configured() -> None:
    assert isinstance(open_store(Settings()), MemoryStore)


async def test_redis_behind_a_breaker_with_the_configured_timeout() -> None:
    store = open_store(Settings(redis_url="redis://127.0.0.1:1/0", store_timeout="50ms"))
    assert isinstance(store, CircuitBreaker) and isinstance(store.inner, RedisStore)
    assert store.inner.timeout == 0.05
    assert await store.ping() is False  # nothing listens there: unavailable, not an exception
    await store.close()
