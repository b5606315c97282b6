"""`KVStore` on a Sentinel-managed Redis primary (`redis+sentinel://host:port[,host:port]/service`),
through redis-py's own asyncio `Sentinel`.

The store is the single-Redis store (redis.py) on a `SentinelConnectionPool`: each new connection
asks the Sentinels for the current primary of the service. When the primary dies, calls fail (the
circuit breaker opens: fail-open misses) until the Sentinels promote a replica; the next
connections then go to the new primary. A connection still open to a demoted primary gets a
`READONLY` error, which redis-py turns into a reconnect.

    redis+sentinel://[[user]:password@]host:port[,host:port...]/service_name[/db][?sentinel_password=...]

User and password authenticate to the primary; `sentinel_password` (and `sentinel_username`) to
Sentinels that have `requirepass` set. `rediss+sentinel://` uses TLS to the primary.
"""

from __future__ import annotations

import contextlib

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from gateway.stores import urls
from gateway.stores.redis import RedisStore, connection_options

DEFAULT_SENTINEL_PORT = 26379


def parse_sentinel_url(url: str) -> tuple[urls.MultiHostURL, str, int]:
    """The parsed URL, the service name and the database number."""
    parsed = urls.parse(url, default_port=DEFAULT_SENTINEL_PORT)
    if parsed.scheme not in urls.SENTINEL_SCHEMES:
        raise ValueError(f"not a Redis Sentinel URL: {urls.redact(url)!r}")
    if not parsed.path or len(parsed.path) > 2:
        raise ValueError(f"a Sentinel URL ends in /service_name[/db]: {urls.redact(url)!r}")
    try:
        db = int(parsed.path[1]) if len(parsed.path) == 2 else 0
    except ValueError:
        raise ValueError(f"bad database number in {urls.redact(url)!r}") from None
    return parsed, parsed.path[0], db


def sentinel_client(url: str, timeout: float, max_extra: float, max_connections: int) -> Redis:
    parsed, service, db = parse_sentinel_url(url)
    options = connection_options(timeout, max_extra)
    sentinel = Sentinel(
        parsed.hosts,
        sentinel_kwargs={
            # Asked once per new connection to the primary: bounded like the connect itself.
            "socket_timeout": timeout + max_extra,
            "socket_connect_timeout": timeout + max_extra,
            "username": parsed.query.get("sentinel_username"),
            "password": parsed.query.get("sentinel_password"),
            "retry": Retry(NoBackoff(), 0),
            "lib_name": None,
            "lib_version": None,
        },
    )
    pool = SentinelConnectionPool(
        service, sentinel, is_master=True, max_connections=max_connections, db=db,
        username=parsed.username, password=parsed.password, ssl=parsed.tls, **options)
    return Redis(connection_pool=pool, retry=Retry(NoBackoff(), 1))


class SentinelStore(RedisStore):
    name = "redis"

    def __init__(self, url: str, timeout: float = 0.1, max_connections: int = 256,
                 client: Redis | None = None, max_extra: float = 1.0) -> None:
        if client is None:
            client = sentinel_client(url, timeout, max_extra, max_connections)
        self._sentinel: Sentinel | None = getattr(client.connection_pool, "sentinel_manager", None)
        super().__init__(url, timeout, max_connections, client=client, max_extra=max_extra)

    async def close(self) -> None:
        await super().close()
        for node in self._sentinel.sentinels if self._sentinel is not None else ():
            with contextlib.suppress(RedisError, OSError):
                await node.aclose()
