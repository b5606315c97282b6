"""Storage behind one small interface (`KVStore`): the embedded store or Redis behind a breaker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.base import KVStore, StoreBusy, StoreCommandError, StoreUnavailable

if TYPE_CHECKING:
    from gateway.config import Settings

__all__ = ["KVStore", "StoreBusy", "StoreCommandError", "StoreUnavailable", "open_store"]


def open_store(settings: Settings, memory_max_bytes: int = 256 * 1024 * 1024) -> KVStore:
    """Redis (pooled, `store_timeout` per call, behind a circuit breaker) when `redis_url` is set,
    else the embedded in-process store. The URL's scheme picks the client: `redis://` and
    `rediss://` a single primary, `redis+cluster://` Redis Cluster (a breaker per primary),
    `redis+sentinel://` a Sentinel-managed primary (gateway/stores/urls.py has the forms).
    Opening does no I/O: the first call connects, so a Redis that is down at start-up degrades to
    misses instead of stopping the gateway. A malformed URL raises ValueError at once."""
    if settings.redis_url:
        from gateway.stores.breaker import CircuitBreaker
        from gateway.stores.urls import CLUSTER_SCHEMES, SENTINEL_SCHEMES, scheme_of

        url, timeout = settings.redis_url, settings.store_timeout
        scheme = scheme_of(url)
        if scheme in CLUSTER_SCHEMES:
            from gateway.stores.cluster import ClusterStore, NodeBreakers

            return NodeBreakers(ClusterStore(url, timeout=timeout))
        if scheme in SENTINEL_SCHEMES:
            from gateway.stores.sentinel import SentinelStore

            return CircuitBreaker(SentinelStore(url, timeout=timeout))
        from gateway.stores.redis import RedisStore

        return CircuitBreaker(RedisStore(url, timeout=timeout))
    from gateway.stores.memory import MemoryStore

    return MemoryStore(max_bytes=memory_max_bytes)
