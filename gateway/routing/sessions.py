"""Session keys and the session → replica bindings every gateway replica shares.

A request's session is, in order: the `x-gateway-session` header, the OpenAI `prompt_cache_key` or
`user` field, else a hash of the conversation's first turns (tools, system prompt and the first user
message — they stay the same for every later turn of the conversation).

The binding of a session to a replica is written to the `KVStore` (Redis when several gateways run)
when a session is first placed or moves, with an idle TTL refreshed as it is used; every gateway
reads it before scoring, so the same session goes to the same replica whichever gateway receives it
(issue 12). A local LRU copy answers when the store does not (fail-open: each gateway then stays
sticky on its own view).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any

import orjson

from gateway.stores.base import KVStore

log = logging.getLogger("gateway.routing")


def session_key(body: dict[str, Any], explicit: str | None = None, scope: str = "") -> str | None:
    """The affinity key of a request (None: nothing to key on, e.g. an empty body)."""
    if explicit:
        return _digest(scope, "s", explicit)
    for name in ("prompt_cache_key", "user"):
        value = body.get(name)
        if isinstance(value, str) and value:
            return _digest(scope, name[0], value)
    head = first_turns(body)
    return _digest(scope, "c", head) if head else None


def first_turns(body: dict[str, Any]) -> str:
    """Model, tools, and the messages up to and including the first user message, serialized."""
    messages = body.get("messages")
    if isinstance(messages, list):
        head: list[Any] = []
        for message in messages:
            head.append(message)
            if isinstance(message, dict) and message.get("role") == "user":
                break
    elif isinstance(body.get("input"), list):
        head = body["input"][:2]
    else:
        head = [body.get("prompt", body.get("input"))]
    if not any(head):
        return ""
    try:
        return orjson.dumps([body.get("model"), body.get("tools"), head], option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return repr([body.get("model"), head])


def _digest(scope: str, kind: str, value: str) -> str:
    # Hashed: raw user ids never reach the store, and keys have a bounded size.
    return hashlib.blake2b(f"{scope}\x00{kind}\x00{value}".encode(), digest_size=16).hexdigest()


class SessionTable:
    """session key → replica name, in the store (shared) with a local LRU copy."""

    def __init__(self, store: KVStore | None, pool: str, ttl: float, local_max: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.prefix = f"gw:route:{pool}:"
        self.ttl = ttl
        self.local_max = local_max
        self._clock = clock
        self._local: OrderedDict[str, tuple[str, float, float]] = OrderedDict()  # key → (replica, expires, refreshed)
        self._writing: dict[str, asyncio.Task[None]] = {}  # key → its store write still under way

    async def get(self, key: str) -> str | None:
        if key in self._writing:  # our own write is still on its way to the store: the local copy is newer
            entry = self._local.get(key)
            if entry is not None:
                return entry[0]
        if self.store is not None:
            try:
                value = await self.store.get(self.prefix + key)
            except Exception as exc:  # StoreUnavailable or worse: the local copy answers
                log.debug("session store read failed: %r", exc)
            else:
                if value is None:
                    self._local.pop(key, None)
                    return None
                replica = value.decode()
                entry = self._local.get(key)
                if entry is None or entry[0] != replica:
                    self._remember(key, replica, refreshed=self._clock())
                return replica
        entry = self._local.get(key)
        if entry is None:
            return None
        if entry[1] <= self._clock():
            del self._local[key]
            return None
        return entry[0]

    async def bind(self, key: str, replica: str) -> None:
        """Place or move `key` on `replica`."""
        self._remember(key, replica, refreshed=self._clock())
        if self.store is not None:
            await self._write(key, replica)

    async def touch(self, key: str, replica: str) -> None:
        """Keep `key` alive; writes to the store at most every ttl/4 per key."""
        if self._due(key, replica) and self.store is not None:
            await self._refresh(key, replica)

    # The request path's forms: the local copy has the binding at once, the store write runs beside the
    # upstream call (a session's next turn comes after this answer; every gateway reads it then).
    def bind_soon(self, key: str, replica: str) -> None:
        self._remember(key, replica, refreshed=self._clock())
        if self.store is not None:
            self._later(key, self._write(key, replica))

    def touch_soon(self, key: str, replica: str) -> None:
        if self._due(key, replica) and self.store is not None:
            self._later(key, self._refresh(key, replica))

    async def drain(self) -> None:
        """Wait (5 s at most) for the store writes still on their way (shutdown)."""
        if self._writing:
            await asyncio.wait(list(self._writing.values()), timeout=5.0)

    def _due(self, key: str, replica: str) -> bool:
        now = self._clock()
        entry = self._local.get(key)
        if entry is not None and entry[0] == replica and now - entry[2] < self.ttl / 4:
            self._local.move_to_end(key)
            return False
        self._remember(key, replica, refreshed=now)
        return True

    def _later(self, key: str, write: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(write)
        self._writing[key] = task

        def written(t: asyncio.Task[None]) -> None:
            if self._writing.get(key) is t:
                del self._writing[key]

        task.add_done_callback(written)

    async def _write(self, key: str, replica: str) -> None:
        assert self.store is not None
        try:
            await self.store.set(self.prefix + key, replica.encode(), ttl=self.ttl)
        except Exception as exc:
            log.debug("session store write failed: %r", exc)

    async def _refresh(self, key: str, replica: str) -> None:
        assert self.store is not None
        try:
            if not await self.store.expire(self.prefix + key, self.ttl):
                await self.store.set(self.prefix + key, replica.encode(), ttl=self.ttl)
        except Exception as exc:
            log.debug("session store refresh failed: %r", exc)

    def _remember(self, key: str, replica: str, refreshed: float) -> None:
        self._local[key] = (replica, refreshed + self.ttl, refreshed)
        self._local.move_to_end(key)
        while len(self._local) > self.local_max:
            self._local.popitem(last=False)
