"""Coalescing for a caller-supplied redis-py client: the single-key commands of one event-loop turn in one pipeline.

`RedisStore` sends the request path's commands on its own pipelined connection (resp.py), which
already writes every command of a turn at once. A client given by the caller (Sentinel, tests) has no
such connection, so its GETs and SETs go through `_batched` here: the commands issued in one turn of
the event loop share one redis-py pipeline (one send, one reply read, one pool checkout), each caller
still getting its own reply or error. The cluster store turns it off (`coalesce = False`): its
pipelines split per node.
"""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError


class TurnBatching:
    """The `_batched` half of `RedisStore`: it reads the store's client and its `coalesce` switch."""

    _r: Redis
    coalesce: bool
    # the commands of the turn being collected (args, the waiter; the leader's has none), or None
    _batch: list[tuple[tuple[Any, ...], asyncio.Future[Any] | None]] | None

    async def _batched(self, *args: Any) -> Any:
        """One single-key command, sent in one pipeline with the others issued in the same turn of the
        event loop. Requests that arrive together (one read of many sockets) reach their GET in the
        same pass over the ready tasks; one send, one reply read and one pool checkout for all of
        them, instead of one each, is most of a hit's store CPU under load. The first command of a
        turn leads: it yields once, so the rest of the pass can join, then sends the batch."""
        if not self.coalesce:
            return await self._r.execute_command(*args)
        if self._batch is not None:
            mine: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._batch.append((args, mine))
            return await mine
        batch: list[tuple[tuple[Any, ...], asyncio.Future[Any] | None]] = [(args, None)]
        self._batch = batch
        try:
            try:
                await asyncio.sleep(0)
            finally:
                self._batch = None
            if len(batch) == 1:
                return await self._r.execute_command(*args)
            pipe = self._r.pipeline(transaction=False)
            for command, _ in batch:
                pipe.execute_command(*command)
            replies = await pipe.execute(raise_on_error=False)
        except BaseException as exc:
            # The others waited on this send: they fail like a failed call of their own (a miss),
            # never with this leader's cancellation.
            failure = exc if isinstance(exc, Exception) else RedisConnectionError("the batch's send was cancelled")
            for _, waiter in batch[1:]:
                if waiter is not None and not waiter.done():
                    waiter.set_exception(failure)
            raise
        for (_, waiter), reply in zip(batch[1:], replies[1:], strict=True):
            if waiter is not None and not waiter.done():  # done: its caller's deadline passed
                if isinstance(reply, Exception):
                    waiter.set_exception(reply)
                else:
                    waiter.set_result(reply)
        if isinstance(replies[0], Exception):
            raise replies[0]
        return replies[0]
