"""Command arguments and connection settings shared by the Redis stores (single, Sentinel, cluster)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

# Deletes KEYS[1] only while it holds ARGV[1]: releasing a lock one still owns, atomically.
DELETE_IF_EQUALS = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""

_GLOB_SPECIAL = str.maketrans({c: "\\" + c for c in "*?[]\\^-"})


def glob_escape(text: str) -> str:
    """`text` as a literal in a Redis MATCH pattern."""
    return text.translate(_GLOB_SPECIAL)


def connection_options(timeout: float, max_extra: float) -> dict[str, Any]:
    """Connection settings every Redis client of the gateway uses (single, Sentinel, cluster)."""
    return {
        # No socket timeout: the per-call deadline bounds every call, and with one set redis-py
        # wraps each send in `asyncio.wait_for` (a new Task per command in 3.11) and each read in
        # another timeout, a fifth of a hit's store CPU.
        "socket_timeout": None,
        "socket_connect_timeout": timeout + max_extra,
        # One immediate retry, inside the same deadline: after Redis restarts, every pooled
        # connection is dead and fails once; the retry reconnects instead of counting a failure per
        # stale connection (and reopening the breaker). No backoff: a down Redis refuses both
        # attempts at once.
        "retry": Retry(NoBackoff(), 1),
        "health_check_interval": 0,
        # No CLIENT SETINFO round trips on every new connection: a burst of requests right after
        # start opens many at once, and those trips ate most of the timeout.
        "lib_name": None,
        "lib_version": None,
    }


def ms(seconds: float) -> int:
    # Redis refuses PX 0; a positive TTL below a millisecond still means "expires at once".
    return max(1, round(seconds * 1000))


def set_args(key: str, value: bytes, ttl: float | None, nx: bool) -> list[Any]:
    args: list[Any] = ["SET", key, value]
    if ttl is not None:
        args += ["PX", ms(ttl)]
    if nx:
        args.append("NX")
    return args


def hincr_commands(key: str, increments: Mapping[str, float], ttl: float | None) -> list[tuple[Any, ...]]:
    """HINCRBY for integers (counters stay exact), HINCRBYFLOAT for floats (written as redis-py
    writes them, `repr`), then PEXPIRE when `ttl` is given."""
    commands: list[tuple[Any, ...]] = [
        ("HINCRBY", key, f, a) if isinstance(a, int) and not isinstance(a, bool)
        else ("HINCRBYFLOAT", key, f, repr(float(a))) for f, a in increments.items()]
    if ttl is not None:
        commands.append(("PEXPIRE", key, ms(ttl)))
    return commands
