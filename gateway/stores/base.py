"""The small storage interface every shared fact goes through.

Response-cache entries, single-flight locks, provider-cache handles, usage aggregates and records,
routing state: all of it lives behind `KVStore`, with an embedded in-process implementation (the
default, one process) and Redis (shared by every gateway replica). Keys are plain strings; callers
put a `{tenant}` hash tag in keys that must share a Redis Cluster slot.

Every method may raise `StoreUnavailable`; callers treat that as a miss (fail-open).
"""

from __future__ import annotations

import asyncio
import builtins
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence


class StoreUnavailable(Exception):
    """The store did not answer in time, refused, or its circuit breaker is open."""


class StoreCommandError(StoreUnavailable):
    """The store answered but refused the command (Redis `OOM` when full, a wrong type).

    Still a `StoreUnavailable` for callers (fail-open), but the circuit breaker does not count it:
    a full Redis still serves reads, so refusing every call would only lose hits.
    """


class StoreBusy(StoreUnavailable):
    """This process could not complete the call for reasons of its own (no free connection; its
    event loop stalled past the deadline): says nothing about the store's health, so the circuit
    breaker counts it neither as a failure nor as a success."""


class KVStore(ABC):
    name: str = "kv"
    # Whether other gateway processes see this store. The embedded store is this process's alone,
    # so cross-replica coordination through it (single-flight locks) would only cost time.
    shared: bool = True

    # ---- plain values ----
    @abstractmethod
    async def get(self, key: str) -> bytes | None: ...

    @abstractmethod
    async def set(self, key: str, value: bytes, ttl: float | None = None, nx: bool = False) -> bool:
        """Store `value`; with `nx` only when the key is absent. True when written."""

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """The values of `keys`, in order (one round trip where the store can batch)."""
        return list(await asyncio.gather(*(self.get(key) for key in keys)))

    async def set_many(self, items: Sequence[tuple[str, bytes]], ttl: float | None = None) -> None:
        """Store every (key, value) with the same TTL, in order (one round trip where the store can batch)."""
        for key, value in items:
            await self.set(key, value, ttl)

    async def set_then_get(self, key: str, value: bytes, read: str, ttl: float | None = None,
                           nx: bool = False) -> tuple[bool, bytes | None]:
        """`set(key, value, ttl, nx)`, then the value of `read`, in that order (one round trip where the
        store can): taking a lock and reading what it guards."""
        written = await self.set(key, value, ttl, nx)
        return written, await self.get(read)

    async def set_then_delete_if_equals(self, key: str, value: bytes, ttl: float | None, other: str,
                                        token: bytes) -> bool:
        """`set(key, value, ttl)`, then `delete_if_equals(other, token)`, in that order (one round trip
        where the store can): storing what a lock guarded, then releasing it."""
        await self.set(key, value, ttl)
        return await self.delete_if_equals(other, token)

    @abstractmethod
    async def delete(self, *keys: str) -> int: ...

    @abstractmethod
    async def delete_if_equals(self, key: str, value: bytes) -> bool:
        """Delete `key` only while it still holds `value` (releasing a lock one owns)."""

    @abstractmethod
    async def expire(self, key: str, ttl: float) -> bool: ...

    @abstractmethod
    async def ttl(self, key: str) -> float | None:
        """Seconds left, None when the key is absent or has no expiry."""

    # ---- counters and hashes (usage aggregates, break-even statistics) ----
    @abstractmethod
    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int: ...

    @abstractmethod
    async def hincr(self, key: str, increments: Mapping[str, float], ttl: float | None = None) -> None:
        """Add each amount to its field (ints stay ints, floats are added as floats)."""

    @abstractmethod
    async def hset(self, key: str, mapping: Mapping[str, str | bytes | int | float],
                   ttl: float | None = None) -> None:
        """Set the fields; with `ttl`, (re)set the key's expiry in the same call."""

    @abstractmethod
    async def hgetall(self, key: str) -> dict[str, str]: ...

    # ---- sets (per-tenant indexes for purge without KEYS) ----
    @abstractmethod
    async def sadd(self, key: str, *members: str) -> int: ...

    @abstractmethod
    async def srem(self, key: str, *members: str) -> int: ...

    @abstractmethod
    async def smembers(self, key: str) -> builtins.set[str]: ...

    # ---- capped append-only log (usage records) ----
    @abstractmethod
    async def log_append(self, key: str, records: list[bytes], maxlen: int) -> None:
        """Append records in order; keep about the newest `maxlen`."""

    @abstractmethod
    async def log_read(self, key: str, count: int) -> list[bytes]:
        """The newest `count` records, newest first."""

    # ---- iteration and health ----
    @abstractmethod
    def scan(self, prefix: str) -> AsyncIterator[str]:
        """Keys starting with `prefix` (incremental; never a blocking KEYS)."""

    @abstractmethod
    async def ping(self) -> bool: ...

    async def close(self) -> None:
        return None
