"""The embedded in-process store: the default when `GATEWAY_REDIS_URL` is unset.

Plain values sit in an LRU bounded by bytes (the response cache can be large); counters, hashes,
sets and logs are small bookkeeping and are bounded by their callers (logs by `maxlen`).
Everything runs on the event loop without awaiting anything, so each call is atomic.
"""

from __future__ import annotations

import builtins
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Mapping

from gateway.stores.base import KVStore


class MemoryStore(KVStore):
    name = "memory"
    shared = False

    def __init__(self, max_bytes: int = 256 * 1024 * 1024, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_bytes = max_bytes
        self._clock = clock
        self._values: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._expiry: dict[str, float] = {}
        self._hashes: dict[str, dict[str, float | str]] = {}
        self._sets: dict[str, set[str]] = {}
        self._logs: dict[str, deque[bytes]] = {}

    # ---- expiry -------------------------------------------------------------------------------
    def _alive(self, key: str) -> bool:
        deadline = self._expiry.get(key)
        if deadline is not None and deadline <= self._clock():
            self._drop(key)
            return False
        return key in self._values or key in self._hashes or key in self._sets or key in self._logs

    def _drop(self, key: str) -> bool:
        self._expiry.pop(key, None)
        found = False
        if key in self._values:
            self._bytes -= len(self._values.pop(key)) + len(key)
            found = True
        for table in (self._hashes, self._sets, self._logs):
            if key in table:
                del table[key]
                found = True
        return found

    def _set_ttl(self, key: str, ttl: float | None) -> None:
        if ttl is None:
            self._expiry.pop(key, None)
        else:
            self._expiry[key] = self._clock() + ttl

    # ---- plain values -------------------------------------------------------------------------
    async def get(self, key: str) -> bytes | None:
        if not self._alive(key) or key not in self._values:
            return None
        self._values.move_to_end(key)
        return self._values[key]

    async def set(self, key: str, value: bytes, ttl: float | None = None, nx: bool = False) -> bool:
        if nx and self._alive(key):
            return False
        self._drop(key)
        size = len(value) + len(key)
        if size > self.max_bytes:
            return False
        self._values[key] = value
        self._bytes += size
        self._set_ttl(key, ttl)
        while self._bytes > self.max_bytes:
            oldest = next(iter(self._values))
            self._drop(oldest)
        return True

    async def delete(self, *keys: str) -> int:
        return sum(1 for k in keys if self._alive(k) and self._drop(k))

    async def delete_if_equals(self, key: str, value: bytes) -> bool:
        if await self.get(key) == value:
            return self._drop(key)
        return False

    async def expire(self, key: str, ttl: float) -> bool:
        if not self._alive(key):
            return False
        self._set_ttl(key, ttl)
        return True

    async def ttl(self, key: str) -> float | None:
        if not self._alive(key) or key not in self._expiry:
            return None
        return max(0.0, self._expiry[key] - self._clock())

    # ---- counters and hashes ------------------------------------------------------------------
    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        current = int(await self.get(key) or b"0") + amount
        keep = await self.ttl(key)
        await self.set(key, str(current).encode(), ttl if ttl is not None else keep)
        return current

    async def hincr(self, key: str, increments: Mapping[str, float], ttl: float | None = None) -> None:
        self._alive(key)
        table = self._hashes.setdefault(key, {})
        for field_name, amount in increments.items():
            old = table.get(field_name, 0)
            table[field_name] = (float(old) if isinstance(old, str) else old) + amount
        if ttl is not None:
            self._set_ttl(key, ttl)

    async def hset(self, key: str, mapping: Mapping[str, str | bytes | int | float],
                   ttl: float | None = None) -> None:
        self._alive(key)
        table = self._hashes.setdefault(key, {})
        for k, v in mapping.items():
            table[k] = v.decode() if isinstance(v, bytes) else v
        if ttl is not None:
            self._set_ttl(key, ttl)

    async def hgetall(self, key: str) -> dict[str, str]:
        if not self._alive(key):
            return {}
        return {k: _num_text(v) for k, v in self._hashes.get(key, {}).items()}

    # ---- sets ---------------------------------------------------------------------------------
    async def sadd(self, key: str, *members: str) -> int:
        self._alive(key)
        if not members:  # an empty set must not come to exist (Redis has no empty sets)
            return 0
        members_set = self._sets.setdefault(key, set())
        before = len(members_set)
        members_set.update(members)
        return len(members_set) - before

    async def srem(self, key: str, *members: str) -> int:
        if not self._alive(key) or key not in self._sets:  # absent, or not a set
            return 0
        members_set = self._sets[key]
        before = len(members_set)
        members_set.difference_update(members)
        if not members_set:
            self._drop(key)
        return before - len(members_set)

    async def smembers(self, key: str) -> builtins.set[str]:
        return set(self._sets.get(key, ())) if self._alive(key) else set()

    # ---- logs ---------------------------------------------------------------------------------
    async def log_append(self, key: str, records: list[bytes], maxlen: int) -> None:
        self._alive(key)
        log = self._logs.get(key)
        if log is None or log.maxlen != maxlen:
            log = self._logs[key] = deque(log or (), maxlen=maxlen)
        log.extend(records)

    async def log_read(self, key: str, count: int) -> list[bytes]:
        if not self._alive(key):
            return []
        log = self._logs.get(key, deque())
        return [log[-1 - i] for i in range(min(count, len(log)))]

    # ---- iteration and health -----------------------------------------------------------------
    async def scan(self, prefix: str) -> AsyncIterator[str]:
        keys = [k for k in (*self._values, *self._hashes, *self._sets, *self._logs) if k.startswith(prefix)]
        for key in keys:
            if self._alive(key):
                yield key

    async def ping(self) -> bool:
        return True


def _num_text(value: float | str) -> str:
    """Render like Redis does: integers without a decimal point."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
