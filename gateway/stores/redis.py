"""`KVStore` on Redis (redis-py asyncio + hiredis), shared by every gateway replica.

Failure behaviour is the point of this module (a Redis that hangs must not hang the proxy):
- every call runs under one deadline: `timeout` (settings `store_timeout`, 0.1 s by default) plus a
  few times the event loop's current lag (looplag.py) and a little per item of a batch, at most
  `max_extra` more. It covers the connect and the reply; a saturated gateway does not blame Redis
  for its own queueing;
- redis-py retries once, at once, within that deadline (its default retries ten times with backoff up
  to seconds: a dead Redis would hold each request that long);
- every error becomes `StoreUnavailable` (`StoreCommandError` when Redis answered with an error,
  e.g. `OOM` when full), so callers treat it as a miss. `CircuitBreaker` (breaker.py) wraps this.

Redis Cluster and Sentinel (cluster.py, sentinel.py) reuse this class with another client: no
command here spans two keys (a multi-key delete is a non-transactional pipeline of one `UNLINK` per
key, which cluster clients split per node), and the `MULTI` pipelines below hold commands on one
key only; the cluster store sends them without `MULTI` (`atomic = False`).

Logs (`log_append`/`log_read`) are lists: `LPUSH` of the records in order then `LTRIM 0 maxlen-1`
in one `MULTI`, so the head is the newest record, `LRANGE 0 count-1` reads newest first and the cap
is exact (the memory store's semantics). A stream with `MAXLEN ~` would trim lazily and return ids
we have no use for.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import MaxConnectionsError, RedisError, ResponseError

from gateway.stores.base import KVStore, StoreBusy, StoreCommandError, StoreUnavailable
from gateway.stores.looplag import LoopLag, for_loop
from gateway.stores.redis_args import DELETE_IF_EQUALS, connection_options, glob_escape, hincr_commands, ms, set_args
from gateway.stores.redis_batch import TurnBatching
from gateway.stores.resp import PipelinedRedis

__all__ = ["RedisStore", "connection_options", "glob_escape"]

T = TypeVar("T")


class RedisStore(TurnBatching, KVStore):
    name = "redis"
    # Whether the multi-command writes (INCRBY+PEXPIRE, HINCRBY…+PEXPIRE, LPUSH+LTRIM) go in one
    # MULTI/EXEC. Each touches one key; the cluster store turns it off (see cluster.py).
    atomic = True
    # Whether GET and SET issued in one turn of the event loop share a pipeline (`_batched`,
    # redis_batch.py); the cluster store sends each on its own (its pipelines split per node).
    coalesce = True

    def __init__(self, url: str, timeout: float = 0.1, max_connections: int = 256,
                 client: Redis | None = None, max_extra: float = 1.0) -> None:
        self.timeout = timeout
        self.max_extra = max_extra
        self._lag: LoopLag | None = None  # the running loop's sampler, found on first use (`lag`)
        own_pool = client is None
        if client is None:
            # A plain pool (no waiting for a free connection: past `max_connections` calls in
            # flight a call fails at once with StoreBusy). Its checkout costs a third less CPU per
            # command than the blocking pool's, and a hit is mostly one GET.
            pool = ConnectionPool.from_url(url, max_connections=max_connections,
                                           **connection_options(timeout, max_extra))
            client = Redis(connection_pool=pool, retry=Retry(NoBackoff(), 1))
        self._r = client
        # The request path's commands on one pipelined connection of our own (resp.py: a third of
        # redis-py's CPU per command); a client given by the caller (Sentinel, tests) is used as is.
        self._lean = PipelinedRedis.from_url(url, max_connections) if own_pool else None
        self._batch: list[tuple[tuple[Any, ...], asyncio.Future[Any] | None]] | None = None
        self._delete_if_equals = client.register_script(DELETE_IF_EQUALS)

    @property
    def lag(self) -> LoopLag:
        """The event loop's lag sampler, shared with the other stores on this loop (a store's
        connections belong to one loop, so the first one it runs on is the one)."""
        lag = self._lag
        if lag is None:
            lag = self._lag = for_loop(asyncio.get_running_loop())
        return lag

    def deadline(self, items: int = 1) -> float:
        """Seconds this call may take: the timeout, plus our own loop's current lag (three loop
        turns per round trip: send, readable, resume) and 0.2 ms per item beyond the first for
        batches (a flush of hundreds of usage records is not a hung Redis), capped."""
        lag = self._lag.value if self._lag is not None else 0.0  # none yet: no call has run on a loop
        return self.timeout + min(self.max_extra, 3 * lag + 0.0002 * max(0, items - 1))

    async def _call(self, op: Callable[[], Awaitable[T]], items: int = 1, read: bool = False) -> T:
        """Run `op` under the deadline. `read`: the command changes nothing, so it may be sent once
        more when this process (not Redis) made it miss the deadline."""
        self.lag.ensure_running()
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            budget = self.deadline(items)
            started = loop.time()
            try:
                async with asyncio.timeout(budget):
                    return await op()
            except ResponseError as exc:
                raise StoreCommandError(f"redis refused the command: {exc}") from exc
            except MaxConnectionsError as exc:
                raise StoreBusy("no free redis connection in this process") from exc
            except TimeoutError as exc:  # asyncio's and the socket's (redis' TimeoutError is a RedisError)
                # The timer fired long after it was due: the loop was stalled (GC, a blocking call,
                # the process descheduled), so the reply may well have been waiting. Not Redis' fault.
                late = loop.time() - started - budget
                if late <= max(0.02, budget / 2):
                    if self.lag.value >= self.timeout / 2:
                        # Our own loop is this slow: the reply may be queued behind our work.
                        raise StoreBusy(f"no answer within {budget:.3g}s while this process's event loop "
                                        f"lags {self.lag.value * 1000:.0f} ms") from exc
                    raise StoreUnavailable(f"redis did not answer within {budget:.3g}s") from exc
                self.lag.value = max(self.lag.value, late)
                if not read or attempt == 2:
                    raise StoreBusy(f"this process stalled {late * 1000:.0f} ms past the store deadline") from exc
            except (RedisError, OSError) as exc:
                raise StoreUnavailable(f"redis unavailable: {type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable")

    async def _send(self, *commands: Sequence[Any]) -> list[Any]:
        """`commands` on the pipelined connection, in order; the first error reply raised."""
        replies = await self._lean.execute(*commands)  # type: ignore[union-attr]
        for reply in replies:
            if isinstance(reply, ResponseError):
                raise reply
        return replies

    async def _transaction(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """`commands` (on one key) in one MULTI/EXEC on the pipelined connection: one call's commands
        leave together, so nothing of another caller falls between MULTI and EXEC. EXEC's replies,
        the first error among them raised (as redis-py's transaction pipeline does)."""
        replies = await self._send(("MULTI",), *commands, ("EXEC",))
        results = replies[-1]
        if results is None:
            raise ResponseError("the transaction was aborted")
        for reply in results:
            if isinstance(reply, Exception):
                raise ResponseError(str(reply))
        return list(results)

    async def _one(self, *command: Any) -> Any:
        if self._lean is not None:
            return (await self._send(command))[0]
        return await self._batched(*command)

    # ---- plain values -------------------------------------------------------------------------
    async def get(self, key: str) -> bytes | None:
        return await self._call(lambda: self._one("GET", key), read=True)

    async def set(self, key: str, value: bytes, ttl: float | None = None, nx: bool = False) -> bool:
        args = set_args(key, value, ttl, nx)
        return bool(await self._call(lambda: self._one(*args)))

    async def set_then_get(self, key: str, value: bytes, read: str, ttl: float | None = None,
                           nx: bool = False) -> tuple[bool, bytes | None]:
        if not self.coalesce:
            return await super().set_then_get(key, value, read, ttl, nx)
        args = set_args(key, value, ttl, nx)
        if self._lean is not None:
            written, found = await self._call(lambda: self._send(args, ("GET", read)), 2)
            return bool(written), found

        async def run() -> list[Any]:
            # Not a MULTI: the two keys may live apart; a pipeline keeps the order on one connection.
            pipe = self._r.pipeline(transaction=False)
            pipe.execute_command(*args)
            pipe.execute_command("GET", read)
            return await pipe.execute()

        written, found = await self._call(run, 2)
        return bool(written), found

    async def set_then_delete_if_equals(self, key: str, value: bytes, ttl: float | None, other: str,
                                        token: bytes) -> bool:
        if not self.coalesce:
            return await super().set_then_delete_if_equals(key, value, ttl, other, token)
        args = set_args(key, value, ttl, False)
        if self._lean is not None:  # the SET's failure first: the caller learns its value was not stored
            return bool((await self._call(lambda: self._send(args, ("EVAL", DELETE_IF_EQUALS, 1, other, token)), 2))[1])

        async def run() -> list[Any]:
            pipe = self._r.pipeline(transaction=False)
            pipe.execute_command(*args)
            pipe.execute_command("EVAL", DELETE_IF_EQUALS, 1, other, token)
            replies = await pipe.execute(raise_on_error=False)
            for reply in replies:  # the SET's failure first: the caller learns its value was not stored
                if isinstance(reply, Exception):
                    raise reply
            return replies

        return bool((await self._call(run, 2))[1])

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if len(keys) <= 1:
            return [await self.get(keys[0])] if keys else []
        if self._lean is not None:
            # a failed GET fails the call, as in the pipeline below
            return await self._call(lambda: self._send(*(("GET", k) for k in keys)), len(keys), read=True)

        async def run() -> list[Any]:
            # One GET per key in a pipeline, not MGET: a multi-key MGET would be cross-slot in a cluster.
            pipe = self._r.pipeline(transaction=False)
            for key in keys:
                pipe.execute_command("GET", key)
            return await pipe.execute()

        return list(await self._call(run, len(keys), read=True))

    async def set_many(self, items: Sequence[tuple[str, bytes]], ttl: float | None = None) -> None:
        if len(items) <= 1:
            for key, value in items:
                await self.set(key, value, ttl)
            return
        px = ms(ttl) if ttl is not None else None
        if self._lean is not None:
            tail = ("PX", px) if px is not None else ()
            await self._call(lambda: self._send(*(("SET", k, v, *tail) for k, v in items)), len(items))
            return

        async def run() -> list[Any]:
            pipe = self._r.pipeline(transaction=False)
            for key, value in items:
                if px is None:
                    pipe.execute_command("SET", key, value)
                else:
                    pipe.execute_command("SET", key, value, "PX", px)
            return await pipe.execute()

        await self._call(run, len(items))

    async def delete(self, *keys: str) -> int:
        if not keys:
            return 0
        if self._lean is not None:
            unique = list(dict.fromkeys(keys))
            return sum(int(n) for n in await self._call(lambda: self._send(*(("UNLINK", k) for k in unique)),
                                                        len(unique)))
        if len(keys) == 1:
            return int(await self._call(lambda: self._r.unlink(keys[0])))

        async def many() -> list[Any]:
            # One UNLINK per key: a multi-key UNLINK would be cross-slot in a cluster.
            pipe = self._r.pipeline(transaction=False)
            for key in dict.fromkeys(keys):
                # execute_command, not pipe.unlink(): a cluster pipeline's unlink() is a coroutine
                # that, not awaited, would queue nothing.
                pipe.execute_command("UNLINK", key)
            return await pipe.execute()

        return sum(int(n) for n in await self._call(many, len(keys)))

    async def delete_if_equals(self, key: str, value: bytes) -> bool:
        if self._lean is not None:
            return bool(await self._call(lambda: self._one("EVAL", DELETE_IF_EQUALS, 1, key, value)))
        return bool(await self._call(lambda: self._delete_if_equals(keys=[key], args=[value])))

    async def expire(self, key: str, ttl: float) -> bool:
        return bool(await self._call(lambda: self._one("PEXPIRE", key, ms(ttl))))

    async def ttl(self, key: str) -> float | None:
        left = int(await self._call(lambda: self._one("PTTL", key), read=True))
        return None if left < 0 else left / 1000  # -2 absent, -1 no expiry

    # ---- counters and hashes ------------------------------------------------------------------
    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        if ttl is None:
            return int(await self._call(lambda: self._r.incrby(key, amount)))

        async def run() -> list[Any]:
            pipe = self._r.pipeline(transaction=self.atomic)
            pipe.incrby(key, amount)
            pipe.pexpire(key, ms(ttl))
            return await pipe.execute()

        return int((await self._call(run))[0])

    async def hincr(self, key: str, increments: Mapping[str, float], ttl: float | None = None) -> None:
        if not increments and ttl is None:
            return
        if self._lean is not None:
            commands = hincr_commands(key, increments, ttl)
            await self._call(lambda: self._transaction(commands), len(increments))
            return

        async def run() -> list[Any]:
            pipe = self._r.pipeline(transaction=self.atomic)
            for field_name, amount in increments.items():
                # Integers with HINCRBY so counters stay exact; floats with HINCRBYFLOAT.
                if isinstance(amount, int) and not isinstance(amount, bool):
                    pipe.hincrby(key, field_name, amount)
                else:
                    pipe.hincrbyfloat(key, field_name, float(amount))
            if ttl is not None:
                pipe.pexpire(key, ms(ttl))
            return await pipe.execute()

        await self._call(run, len(increments))

    async def hset(self, key: str, mapping: Mapping[str, str | bytes | int | float],
                   ttl: float | None = None) -> None:
        if not mapping:
            if ttl is not None:
                await self.expire(key, ttl)
            return
        if self._lean is not None:
            flat = [x for k, v in mapping.items() for x in (k, repr(v) if isinstance(v, float) else v)]
            if ttl is None:
                await self._call(lambda: self._one("HSET", key, *flat), len(mapping))
            else:  # one round trip, and never a hash left without its expiry
                await self._call(lambda: self._transaction([("HSET", key, *flat), ("PEXPIRE", key, ms(ttl))]),
                                 len(mapping))
            return
        if ttl is None:
            await self._call(lambda: self._r.hset(key, mapping=dict(mapping)), len(mapping))
            return

        async def run() -> list[Any]:
            pipe = self._r.pipeline(transaction=self.atomic)
            pipe.hset(key, mapping=dict(mapping))
            pipe.pexpire(key, ms(ttl))
            return await pipe.execute()

        await self._call(run, len(mapping))

    async def hgetall(self, key: str) -> dict[str, str]:
        if self._lean is not None:  # RESP2: field, value, field, value ...
            flat = await self._call(lambda: self._one("HGETALL", key), read=True)
            return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}
        raw = await self._call(lambda: self._r.hgetall(key), read=True)
        return {k.decode(): v.decode() for k, v in raw.items()}

    # ---- sets ---------------------------------------------------------------------------------
    async def sadd(self, key: str, *members: str) -> int:
        if not members:
            return 0
        if self._lean is not None:
            return int(await self._call(lambda: self._one("SADD", key, *members)))
        return int(await self._call(lambda: self._r.sadd(key, *members)))

    async def srem(self, key: str, *members: str) -> int:
        if not members:
            return 0
        return int(await self._call(lambda: self._r.srem(key, *members)))

    async def smembers(self, key: str) -> builtins.set[str]:
        raw = await self._call(lambda: self._r.smembers(key), read=True)
        return {m.decode() for m in raw}

    # ---- logs ---------------------------------------------------------------------------------
    async def log_append(self, key: str, records: list[bytes], maxlen: int) -> None:
        if not records:
            return
        if self._lean is not None:
            await self._call(lambda: self._transaction([("LPUSH", key, *records), ("LTRIM", key, 0, maxlen - 1)]),
                             len(records))
            return

        async def run() -> list[Any]:
            pipe = self._r.pipeline(transaction=self.atomic)
            pipe.lpush(key, *records)
            pipe.ltrim(key, 0, maxlen - 1)
            return await pipe.execute()

        await self._call(run, len(records))

    async def log_read(self, key: str, count: int) -> list[bytes]:
        if count <= 0:
            return []
        return list(await self._call(lambda: self._r.lrange(key, 0, count - 1), count, read=True))

    # ---- iteration and health -----------------------------------------------------------------
    async def scan(self, prefix: str) -> AsyncIterator[str]:
        cursor: int = 0
        pattern = glob_escape(prefix) + "*"
        while True:
            # One SCAN step per call so each step gets the timeout, never the whole walk.
            cursor, keys = await self._call(lambda c=cursor: self._r.scan(c, match=pattern, count=1000), read=True)
            for key in keys:
                yield key.decode()
            if int(cursor) == 0:
                return

    async def ping(self) -> bool:
        return bool(await self._call(self._r.ping, read=True))

    async def close(self) -> None:
        if self._lag is not None:  # the others on this loop restart it on their next call
            await self._lag.stop()
        if self._lean is not None:
            await self._lean.close()
        try:
            await self._r.aclose()
            await self._r.connection_pool.disconnect()
        except (RedisError, OSError):
            pass
