"""One pipelined Redis connection for the request path's commands (GET, SET, EVAL, UNLINK, PEXPIRE, PTTL).

Why not redis-py here: its asyncio client spends ~130 µs of CPU per command on this kind of machine
outside the round trip itself (pool checkout and release, the retry wrapper, observability hooks,
per-command parsing set-up), against ~35 µs for writing a command and reading its reply on a plain
asyncio connection. A hit is one GET and a miss about five round trips, so that overhead was most of
the store's share of a request. redis-py still serves everything else (hashes, sets, logs, scans,
Sentinel and Cluster).

RESP answers in order on a connection, so commands are written as they come and each reply goes to
the oldest waiting caller. Every command issued in one turn of the event loop goes out in one write
(the flush is scheduled with `call_soon`), and hiredis parses all the replies of one read: the
batching `RedisStore._batched` does with pipelines, for every caller at once.

Failure rules (the store's, see redis.py): a caller that gives up (its deadline) leaves its reply
slot in place, so later replies still reach their own callers; a lost connection fails every
waiting caller with a connection error and the next call reconnects; a call that met a dead
connection it had not yet seen die is tried once more on a fresh one (redis-py's one immediate
retry); past `max_in_flight` calls waiting, a call fails at once (`MaxConnectionsError`, which the
store reports as busy, as it does for a full pool).
"""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from collections.abc import Sequence
from typing import Any

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError, ResponseError

Command = Sequence[str | bytes | int | float]


class _Waiting:
    """A caller's commands: the replies still due, and the future that gets them all."""

    __slots__ = ("due", "future", "replies")

    def __init__(self, future: asyncio.Future[list[Any]], due: int) -> None:
        self.future, self.due = future, due
        self.replies: list[Any] = []


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader()
        self.waiting: deque[_Waiting] = deque()
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.used = False  # a command was answered on it (a failure then may be a stale connection)
        self._out: list[bytes] = []
        self._flush_scheduled = False

    # ---- asyncio.Protocol -------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        try:
            while (reply := self.reader.gets()) is not False:
                if not self.waiting:  # a reply nobody asked for: the stream is out of step
                    raise RedisConnectionError("redis sent a reply no command was waiting for")
                head = self.waiting[0]
                head.replies.append(ResponseError(str(reply)) if isinstance(reply, hiredis.ReplyError) else reply)
                head.due -= 1
                if head.due == 0:
                    self.waiting.popleft()
                    if not head.future.done():  # done: its caller gave up (a deadline)
                        head.future.set_result(head.replies)
            self.used = True
        except (hiredis.ProtocolError, RedisConnectionError) as exc:
            self._fail(RedisConnectionError(f"unreadable reply from redis: {exc}"))
            if self.transport is not None:
                self.transport.abort()

    def eof_received(self) -> bool:
        return False  # close: Redis hung up

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(RedisConnectionError(f"connection to redis lost: {exc or 'closed by the server'}"))

    # ---- sending ----------------------------------------------------------------------------------
    def send(self, commands: Sequence[Command]) -> asyncio.Future[list[Any]]:
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self.waiting.append(_Waiting(future, len(commands)))
        # hiredis types its argument as a one-item tuple; any length is packed
        self._out.extend(hiredis.pack_command(tuple(c)) for c in commands)  # type: ignore[arg-type]
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        return future

    def _flush(self) -> None:
        self._flush_scheduled = False
        out, self._out = self._out, []
        if self.transport is not None and not self.closed and out:
            self.transport.write(b"".join(out))

    def _fail(self, exc: Exception) -> None:
        self.closed = True
        waiting, self.waiting = self.waiting, deque()
        for entry in waiting:
            if not entry.future.done():
                entry.future.set_exception(exc)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._fail(RedisConnectionError("connection closed"))


class PipelinedRedis:
    """`execute(*commands)`: the replies of `commands`, sent together, in order (error replies as
    `ResponseError` values in the list, for the caller to raise or not)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 6379, db: int = 0, username: str | None = None,
                 password: str | None = None, max_in_flight: int = 256) -> None:
        self.host, self.port, self.db = host, port, db
        self.username, self.password = username, password
        self.max_in_flight = max_in_flight
        self._conn: _Connection | None = None
        self._connecting: asyncio.Task[_Connection] | None = None

    @classmethod
    def from_url(cls, url: str, max_in_flight: int = 256) -> PipelinedRedis | None:
        """For a plain `redis://` URL with no options beyond host, port, db and credentials; None
        otherwise (TLS, a unix socket, query options: redis-py handles those)."""
        from redis.asyncio.connection import parse_url

        if not url.startswith("redis://"):
            return None
        options: dict[str, Any] = dict(parse_url(url))
        if set(options) - {"host", "port", "db", "username", "password"}:
            return None
        user, password = options.get("username"), options.get("password")
        return cls(str(options.get("host") or "127.0.0.1"), int(options.get("port") or 6379),
                   int(options.get("db") or 0), str(user) if user else None,
                   str(password) if password is not None else None, max_in_flight)

    async def execute(self, *commands: Command) -> list[Any]:
        conn = self._conn
        if conn is None or conn.closed:
            conn = await self._connect()
        elif len(conn.waiting) >= self.max_in_flight:
            raise MaxConnectionsError(f"{len(conn.waiting)} redis calls already waiting")
        try:
            return await conn.send(commands)
        except RedisConnectionError:
            if not conn.used or not conn.closed:
                raise
            # A connection that had worked died under this call (Redis restarted): once more on a new one.
            conn = await self._connect()
            return await conn.send(commands)

    async def _connect(self) -> _Connection:
        if self._connecting is None:
            self._connecting = asyncio.get_running_loop().create_task(self._open())
            self._connecting.add_done_callback(self._connected)
        # shielded: one caller's deadline must not cancel the connect the others wait on
        return await asyncio.shield(self._connecting)

    def _connected(self, task: asyncio.Task[_Connection]) -> None:
        self._connecting = None
        if not task.cancelled() and task.exception() is None:
            self._conn = task.result()

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(_Connection, self.host, self.port)
        except OSError as exc:
            raise RedisConnectionError(f"cannot connect to redis at {self.host}:{self.port}: {exc}") from exc
        setup: list[Command] = []
        if self.password is not None:
            setup.append(("AUTH", self.username, self.password) if self.username else ("AUTH", self.password))
        if self.db:
            setup.append(("SELECT", self.db))
        if setup:
            for reply in await conn.send(setup):
                if isinstance(reply, ResponseError):
                    conn.close()
                    raise reply
        return conn

    async def close(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
