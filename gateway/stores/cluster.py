"""`KVStore` on Redis Cluster (`redis+cluster://host:port,host:port`), through redis-py's own
asyncio `RedisCluster`.

What changes against a single Redis (redis.py), and why:
- **No MULTI.** Every multi-command write of the store touches one key (INCRBY+PEXPIRE,
  HINCRBY…+PEXPIRE, LPUSH+LTRIM), so a cluster pipeline sends it to that key's node in one round
  trip without MULTI/EXEC. redis-py's asyncio cluster *transaction* runs each command through
  `asyncio.run` in a new thread and joins it: it would block the event loop. Losing the MULTI costs
  nothing here: the commands still arrive in order on one connection; another client's command
  may fall between them, which counters and a capped log tolerate.
- **Multi-key deletes** are one `UNLINK` per key in a non-transactional pipeline (redis.py), which
  the cluster client splits per node; no command ever spans two slots.
- **SCAN** walks every primary, or, when the prefix holds a complete `{hash tag}` (every
  per-tenant prefix does: `gw:rc:{acme}:`), only the primary that owns that tag's slot.
- **Topology refreshes** (redis-py re-reads `CLUSTER SLOTS` after a connection error or a failover)
  run shielded from the per-call deadline: cancelling one half-way would make redis-py close every
  node connection, which fails the other calls in flight and starts another refresh.
- **One circuit breaker per primary** (`NodeBreakers`): a killed primary fails only its own slots;
  keys on the other primaries keep hitting. Once a replica takes over, its slots map to a new node
  name, whose breaker starts closed.

Keys that must share a slot carry the tenant as a `{tenant}` hash tag (cache/key.py, usage/keys.py,
provider_cache/); nothing in the gateway needs two keys in one command, so the tags only keep a
tenant's purge on one node.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from redis._parsers.commands import AsyncCommandsParser
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import ClusterDownError, RedisClusterException, RedisError, TryAgainError

from gateway.stores import urls
from gateway.stores.base import KVStore, StoreUnavailable
from gateway.stores.breaker import CircuitBreaker
from gateway.stores.redis import RedisStore, connection_options, glob_escape

T = TypeVar("T")
UNKNOWN_NODE = "?"  # the partition of every key while the topology is not known yet


def parse_cluster_url(url: str) -> urls.MultiHostURL:
    parsed = urls.parse(url, default_port=6379)
    if parsed.scheme not in urls.CLUSTER_SCHEMES:
        raise ValueError(f"not a Redis Cluster URL: {urls.redact(url)!r}")
    if parsed.path not in ([], ["0"]):
        raise ValueError(f"Redis Cluster has only database 0: {urls.redact(url)!r}")
    return parsed


def prefix_slot(prefix: str) -> int | None:
    """The one slot every key starting with `prefix` hashes to, or None when they may spread
    (the prefix holds no complete, non-empty `{…}` tag)."""
    start = prefix.find("{")
    if start < 0:
        return None
    end = prefix.find("}", start + 1)
    if end < 0 or end == start + 1:
        return None
    return key_slot(prefix.encode())


class ClusterStore(RedisStore):
    name = "redis"
    atomic = False
    coalesce = False

    def __init__(self, url: str, timeout: float = 0.1, max_connections: int = 256,
                 client: RedisCluster | None = None, max_extra: float = 1.0) -> None:
        if client is None:
            parsed = parse_cluster_url(url)
            options = connection_options(timeout, max_extra)
            options.pop("retry")  # each node's connections get retries=0 from redis-py; retries are cluster-level
            client = RedisCluster(
                startup_nodes=[ClusterNode(host, port) for host, port in parsed.hosts],
                username=parsed.username, password=parsed.password, ssl=parsed.tls,
                max_connections=max_connections,  # per node
                # No retry inside a call: redis-py would re-read the topology inline, under the
                # call's deadline, and a refresh cancelled half-way closes every node connection.
                # The next call refreshes it, shielded (`_await_topology`); this one is a miss.
                retry=Retry(NoBackoff(), 0),
                # Serve the slots that are covered while a shard is down (fail-open per slot).
                require_full_coverage=False,
                **options,
            )
            client.commands_parser = _CommandTable()
        super().__init__(url, timeout, max_connections, client=client, max_extra=max_extra)
        self._cluster: RedisCluster = client
        self._refresh: asyncio.Task[Any] | None = None

    # ---- the deadline wrapper -----------------------------------------------------------------
    async def _call(self, op: Callable[[], Awaitable[T]], items: int = 1, read: bool = False) -> T:
        if getattr(self._cluster, "_initialize", False):  # set by redis-py: topology unknown or stale
            await self._await_topology()

        async def run() -> T:
            try:
                return await op()
            except (ClusterDownError, TryAgainError) as exc:
                # Redis answered, but for the cluster's state, not the command: a failure for the
                # breaker (a ResponseError would count as an answer).
                raise StoreUnavailable(f"redis cluster unavailable: {exc}") from exc
            except RedisClusterException as exc:  # not a RedisError: no slot owner, no node reachable
                raise StoreUnavailable(f"redis cluster unavailable: {type(exc).__name__}: {exc}") from exc

        return await super()._call(run, items, read)

    async def _await_topology(self) -> None:
        """Wait for the topology (re)load: at start, and after a connection error or failover. It
        reads CLUSTER SLOTS (and, the first time, COMMAND): tens of ms of CPU, more than a call's
        deadline on a busy machine, so it gets the connect timeout instead, and it runs shielded:
        a waiter that gives up leaves it running for the next ones."""
        try:
            async with asyncio.timeout(self.timeout + self.max_extra):
                await asyncio.shield(self._topology())
        except TimeoutError as exc:
            raise StoreUnavailable("redis cluster topology not loaded in time") from exc
        except (RedisError, RedisClusterException, OSError) as exc:
            raise StoreUnavailable(f"redis cluster unreachable: {type(exc).__name__}: {exc}") from exc

    def _topology(self) -> asyncio.Task[Any]:
        """The running topology refresh, or a new one (one at a time, never cancelled by a caller)."""
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.get_running_loop().create_task(self._cluster.initialize())
            self._refresh.add_done_callback(_consume)
        return self._refresh

    # ---- placement ----------------------------------------------------------------------------
    def node_of(self, key: str) -> str:
        """The name (`host:port`) of the primary that owns `key`'s slot, as this client knows it."""
        nodes = self._cluster.nodes_manager.slots_cache.get(key_slot(key.encode()))
        return nodes[0].name if nodes else UNKNOWN_NODE

    async def _scan_targets(self, prefix: str) -> list[ClusterNode]:
        if getattr(self._cluster, "_initialize", False):
            await self._await_topology()
        slot = prefix_slot(prefix)
        if slot is not None:
            nodes = self._cluster.nodes_manager.slots_cache.get(slot)
            if not nodes:
                raise StoreUnavailable(f"no redis cluster node serves slot {slot}")
            return [nodes[0]]
        return self._cluster.get_primaries()

    async def scan(self, prefix: str) -> AsyncIterator[str]:
        pattern = glob_escape(prefix) + "*"
        for node in await self._scan_targets(prefix):
            cursor = 0
            while True:
                # One SCAN step per call so each step gets the timeout, never the whole walk.
                cursors, keys = await self._call(
                    lambda c=cursor, n=node: self._cluster.scan(cursor=c, match=pattern, count=1000, target_nodes=n),
                    read=True)
                for key in keys:
                    yield key.decode()
                cursor = int(next(iter(cursors.values()), 0))
                if cursor == 0:
                    break

    async def close(self) -> None:
        if self._lag is not None:  # the others on this loop restart it on their next call
            await self._lag.stop()
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        with contextlib.suppress(RedisError, RedisClusterException, OSError):
            await self._cluster.aclose()


class _CommandTable(AsyncCommandsParser):
    """redis-py's key-position table (from `COMMAND`), read once: redis-py re-reads it on every
    topology refresh, a large reply that costs ~10 ms of CPU each time a node fails."""

    async def initialize(self, node: ClusterNode | None = None) -> None:
        if node is not None:
            self.node = node
        if not self.commands:
            await super().initialize()


def _consume(task: asyncio.Task[Any]) -> None:
    # The refresh's failure reaches callers as their own call's failure; mark it retrieved.
    if not task.cancelled():
        task.exception()


class NodeBreakers(KVStore):
    """A `CircuitBreaker` per cluster primary: calls are admitted or refused by the breaker of the
    node that owns their key's slot, so one dead shard fails open alone."""

    def __init__(self, inner: ClusterStore, **breaker: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self._options = breaker
        self._breakers: dict[str, CircuitBreaker] = {}

    def breaker(self, key: str | None = None) -> CircuitBreaker:
        """The breaker of `key`'s node (keyless calls share the UNKNOWN_NODE one)."""
        node = self.inner.node_of(key) if key is not None else UNKNOWN_NODE
        found = self._breakers.get(node)
        if found is None:
            found = self._breakers[node] = CircuitBreaker(self.inner, **self._options)
        return found

    @property
    def states(self) -> dict[str, str]:
        return {node: b.state for node, b in self._breakers.items()}

    async def get(self, key: str) -> bytes | None:
        return await self.breaker(key).get(key)

    async def set(self, key: str, value: bytes, ttl: float | None = None, nx: bool = False) -> bool:
        return await self.breaker(key).set(key, value, ttl, nx)

    async def delete(self, *keys: str) -> int:
        groups: dict[str, list[str]] = defaultdict(list)
        for key in keys:
            groups[self.inner.node_of(key)].append(key)
        counts = await asyncio.gather(*(self.breaker(group[0]).delete(*group) for group in groups.values()))
        return sum(counts)

    async def delete_if_equals(self, key: str, value: bytes) -> bool:
        return await self.breaker(key).delete_if_equals(key, value)

    async def expire(self, key: str, ttl: float) -> bool:
        return await self.breaker(key).expire(key, ttl)

    async def ttl(self, key: str) -> float | None:
        return await self.breaker(key).ttl(key)

    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        return await self.breaker(key).incr(key, amount, ttl)

    async def hincr(self, key: str, increments: Mapping[str, float], ttl: float | None = None) -> None:
        await self.breaker(key).hincr(key, increments, ttl)

    async def hset(self, key: str, mapping: Mapping[str, str | bytes | int | float],
                   ttl: float | None = None) -> None:
        await self.breaker(key).hset(key, mapping, ttl)

    async def hgetall(self, key: str) -> dict[str, str]:
        return await self.breaker(key).hgetall(key)

    async def sadd(self, key: str, *members: str) -> int:
        return await self.breaker(key).sadd(key, *members)

    async def srem(self, key: str, *members: str) -> int:
        return await self.breaker(key).srem(key, *members)

    async def smembers(self, key: str) -> builtins.set[str]:
        return await self.breaker(key).smembers(key)

    async def log_append(self, key: str, records: list[bytes], maxlen: int) -> None:
        await self.breaker(key).log_append(key, records, maxlen)

    async def log_read(self, key: str, count: int) -> list[bytes]:
        return await self.breaker(key).log_read(key, count)

    async def scan(self, prefix: str) -> AsyncIterator[str]:
        # A tagged prefix lives on one node: its breaker; otherwise the keyless one.
        guard = self.breaker(prefix if prefix_slot(prefix) is not None else None)
        async for key in guard.scan(prefix):
            yield key

    async def ping(self) -> bool:
        return await self.breaker().ping()

    async def close(self) -> None:
        await self.inner.close()
