"""A circuit breaker around any `KVStore`: a dead store costs nothing per request.

Closed: calls pass through; `threshold` consecutive failures (timeouts, refused connections) open it.
Open: every call fails at once with `StoreUnavailable` (no socket, no waiting) for `cooldown` seconds.
Half-open: after the cool-down one call goes through as a probe while the others still fail fast;
its success closes the breaker, its failure opens it for another cool-down.

`StoreCommandError` (Redis answered, e.g. `OOM` when full) is passed on without counting: the store
is reachable and still serves reads. `StoreBusy` (no free local connection) leaves the state as it
is. Every failure is counted in `gateway_store_errors_total` (kind: timeout, error, command, busy, open).
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from gateway.metrics import STORE_ERRORS
from gateway.stores.base import KVStore, StoreBusy, StoreCommandError, StoreUnavailable

T = TypeVar("T")
log = logging.getLogger("gateway.stores")

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"


class CircuitBreaker(KVStore):
    def __init__(self, inner: KVStore, threshold: int = 5, cooldown: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.name = inner.name
        self.threshold = threshold
        self.cooldown = cooldown
        self._clock = clock
        self._failures = 0
        self._opened_at = 0.0
        self._probing = False
        self.state = CLOSED

    # ---- state machine ------------------------------------------------------------------------
    def _admit(self) -> bool:
        """True when this call may go to the store (and, half-open, becomes the probe)."""
        if self.state == CLOSED:
            return True
        if self.state == OPEN and self._clock() - self._opened_at >= self.cooldown:
            self.state = HALF_OPEN
        if self.state == HALF_OPEN and not self._probing:
            self._probing = True
            return True
        return False

    def _refuse(self) -> StoreUnavailable:
        STORE_ERRORS.labels(store=self.name, kind="open").inc()
        return StoreUnavailable(f"{self.name} circuit breaker is open")

    def _succeeded(self) -> None:
        if self.state != CLOSED:
            log.info("store reachable again; circuit breaker closed", extra={"store": self.name})
        self.state = CLOSED
        self._failures = 0
        self._probing = False

    def _failed(self, exc: StoreUnavailable) -> None:
        if isinstance(exc, StoreBusy):
            STORE_ERRORS.labels(store=self.name, kind="busy").inc()
            self._probing = False
            return
        if isinstance(exc, StoreCommandError):
            STORE_ERRORS.labels(store=self.name, kind="command").inc()
            # The store answered: as good as a success for the breaker.
            self._succeeded()
            return
        kind = "timeout" if isinstance(exc.__cause__, TimeoutError) else "error"
        STORE_ERRORS.labels(store=self.name, kind=kind).inc()
        self._failures += 1
        self._probing = False
        if self.state == HALF_OPEN or self._failures >= self.threshold:
            if self.state != OPEN:
                log.warning("store failing; circuit breaker open",
                            extra={"store": self.name, "error": str(exc), "cooldown_s": self.cooldown})
            self.state = OPEN
            self._opened_at = self._clock()

    async def _guard(self, op: Callable[[], Awaitable[T]]) -> T:
        if not self._admit():
            raise self._refuse()
        try:
            result = await op()
        except StoreUnavailable as exc:
            self._failed(exc)
            raise
        except StopAsyncIteration:  # the end of a scan: the store answered
            self._succeeded()
            raise
        except BaseException:
            # Cancelled (the request went away) or a bug: the probe slot must not stay taken.
            self._probing = False
            raise
        self._succeeded()
        return result

    # ---- KVStore ------------------------------------------------------------------------------
    async def get(self, key: str) -> bytes | None:
        return await self._guard(lambda: self.inner.get(key))

    async def set(self, key: str, value: bytes, ttl: float | None = None, nx: bool = False) -> bool:
        return await self._guard(lambda: self.inner.set(key, value, ttl, nx))

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return await self._guard(lambda: self.inner.get_many(keys))

    async def set_many(self, items: Sequence[tuple[str, bytes]], ttl: float | None = None) -> None:
        await self._guard(lambda: self.inner.set_many(items, ttl))

    async def set_then_get(self, key: str, value: bytes, read: str, ttl: float | None = None,
                           nx: bool = False) -> tuple[bool, bytes | None]:
        return await self._guard(lambda: self.inner.set_then_get(key, value, read, ttl, nx))

    async def set_then_delete_if_equals(self, key: str, value: bytes, ttl: float | None, other: str,
                                        token: bytes) -> bool:
        return await self._guard(lambda: self.inner.set_then_delete_if_equals(key, value, ttl, other, token))

    async def delete(self, *keys: str) -> int:
        return await self._guard(lambda: self.inner.delete(*keys))

    async def delete_if_equals(self, key: str, value: bytes) -> bool:
        return await self._guard(lambda: self.inner.delete_if_equals(key, value))

    async def expire(self, key: str, ttl: float) -> bool:
        return await self._guard(lambda: self.inner.expire(key, ttl))

    async def ttl(self, key: str) -> float | None:
        return await self._guard(lambda: self.inner.ttl(key))

    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        return await self._guard(lambda: self.inner.incr(key, amount, ttl))

    async def hincr(self, key: str, increments: Mapping[str, float], ttl: float | None = None) -> None:
        await self._guard(lambda: self.inner.hincr(key, increments, ttl))

    async def hset(self, key: str, mapping: Mapping[str, str | bytes | int | float],
                   ttl: float | None = None) -> None:
        await self._guard(lambda: self.inner.hset(key, mapping, ttl))

    async def hgetall(self, key: str) -> dict[str, str]:
        return await self._guard(lambda: self.inner.hgetall(key))

    async def sadd(self, key: str, *members: str) -> int:
        return await self._guard(lambda: self.inner.sadd(key, *members))

    async def srem(self, key: str, *members: str) -> int:
        return await self._guard(lambda: self.inner.srem(key, *members))

    async def smembers(self, key: str) -> builtins.set[str]:
        return await self._guard(lambda: self.inner.smembers(key))

    async def log_append(self, key: str, records: list[bytes], maxlen: int) -> None:
        await self._guard(lambda: self.inner.log_append(key, records, maxlen))

    async def log_read(self, key: str, count: int) -> list[bytes]:
        return await self._guard(lambda: self.inner.log_read(key, count))

    async def scan(self, prefix: str) -> AsyncIterator[str]:
        keys = self.inner.scan(prefix)
        while True:
            try:
                key = await self._guard(keys.__anext__)
            except StopAsyncIteration:
                return
            yield key

    async def ping(self) -> bool:
        """False while the store is unreachable or the breaker is open (never raises)."""
        try:
            return await self._guard(self.inner.ping)
        except StoreUnavailable:
            return False

    async def close(self) -> None:
        await self.inner.close()
