"""Storage behind one small interface (`KVStore`): the embedded store or Redis behind a breaker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.base import KVStore, StoreBusy, StoreCommandError, StoreUnavailable

if TYPE_CHECKING:
    from gateway.config import Settings

__all__ = ["KVStore", "StoreBusy", "StoreCommandError", "StoreUnavailable", "open_store"]


def open_store(settings: Settings, memory_max_bytes: int = 256 * 1024 * 1024) -> KVStore:
    """Redis (pooled, `store_timeout` per call, behind a circuit breaker) when `redis_url` is set,
    else the embedded in-process store. Opening does no I/O: the first call connects, so a Redis
    that is down at start-up degrades to misses instead of stopping the gateway."""
    if settings.redis_url:
        from gateway.stores.breaker import CircuitBreaker
        from gateway.stores.redis import RedisStore

        return CircuitBreaker(RedisStore(settings.redis_url, timeout=settings.store_timeout))
    from gateway.stores.memory import MemoryStore

    return MemoryStore(max_bytes=memory_max_bytes)
