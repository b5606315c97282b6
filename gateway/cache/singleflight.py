"""Single-flight: concurrent identical requests share one upstream call.

Inside one process, the first request to miss becomes the leader of a `Flight`; the others follow
it. The leader's neutral events are broadcast as they arrive (a stream follower gets the chunks
live) and the final answer, or the failure, is announced once the leader is done.

Across replicas, the leader also takes a short Redis lock (`SET NX PX` with an owner token, kept
alive while the call runs, released with `delete_if_equals`). A replica that finds the lock taken
polls for the entry with a growing backoff; when the lock disappears without an entry (the leader
failed or chose not to store) or `max_wait` runs out, it calls upstream itself. Nobody waits forever:
followers also give up after `idle_timeout` without news, and a leader whose request vanished
without running its post-stage is detected when its context is garbage-collected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Literal

from gateway.answer import Answer, Event, Finish, TextDelta
from gateway.stores.base import KVStore, StoreUnavailable

log = logging.getLogger("gateway.cache")


class LeaderFailed(Exception):
    """The request this one was riding on ended without a complete answer."""


class Flight:
    """One in-process upstream call that several requests wait on."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.events: list[Event] = []
        self.answer: Answer | None = None
        self.done = False
        self.followers = 0
        self._loop = asyncio.get_running_loop()
        self._wake: asyncio.Future[None] = self._loop.create_future()

    # ---- leader side --------------------------------------------------------------------------
    def publish(self, event: Event) -> None:
        """One live event of the leader's answer (called by the handler's event tap)."""
        if not self.done:
            self.events.append(event)
            self._pulse()

    def resolve(self, answer: Answer | None) -> None:
        """The leader is done: with its complete answer, or None when it failed."""
        if self.done:
            return
        if answer is not None and self.events:
            self._complete_events(answer)
        self.answer, self.done = answer, True
        self._pulse()

    def fail_soon(self) -> None:
        """Thread-safe `resolve(None)` (used from a garbage-collection finalizer)."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.resolve, None)

    def _complete_events(self, answer: Answer) -> None:
        # The live feed must end exactly like the answer: add what the tap did not see.
        if isinstance(self.events[-1], Finish):
            return
        text = "".join(e.text for e in self.events if isinstance(e, TextDelta))
        if answer.text.startswith(text) and len(answer.text) > len(text):
            self.events.append(TextDelta(answer.text[len(text):]))
        self.events.append(Finish(finish_reason=answer.finish_reason, usage_raw=answer.usage_raw))

    def _pulse(self) -> None:
        wake, self._wake = self._wake, self._loop.create_future()
        if not wake.done():
            wake.set_result(None)

    # ---- follower side ------------------------------------------------------------------------
    async def _next_pulse(self, idle: float) -> bool:
        """Wait for news; False after `idle` seconds without any."""
        try:
            await asyncio.wait_for(asyncio.shield(self._wake), idle)
        except TimeoutError:
            return False
        return True

    async def first(self, idle: float) -> Literal["events", "answer", "failed"]:
        """Wait until the first live event, the answer or the failure (whichever comes first)."""
        while True:
            if self.events and not (self.done and self.answer is None):
                return "events"
            if self.done:
                return "answer" if self.answer is not None else "failed"
            if not await self._next_pulse(idle):
                return "failed"

    async def result(self, idle: float) -> Answer | None:
        """The leader's complete answer, or None when it failed or went quiet for `idle` seconds."""
        while not self.done:
            if not await self._next_pulse(idle):
                return None
        return self.answer

    async def subscribe(self, idle: float) -> AsyncIterator[Event]:
        """Every event of the leader's answer, from the first, as they arrive. Raises
        `LeaderFailed` when the leader fails (the follower's stream is then cut like the leader's)."""
        index = 0
        while True:
            while index < len(self.events):
                yield self.events[index]
                index += 1
            if self.done:
                if self.answer is None:
                    raise LeaderFailed("the upstream call this request was riding on failed")
                return
            if not await self._next_pulse(idle):
                raise LeaderFailed(f"no news from the upstream call for {idle:g}s")


class LocalFlights:
    """The in-process registry of flights, by cache key."""

    def __init__(self) -> None:
        self._flights: dict[str, Flight] = {}

    def join(self, key: str) -> tuple[Flight, bool]:
        """The flight for `key` and whether the caller leads it (True: go upstream and resolve it)."""
        flight = self._flights.get(key)
        if flight is not None and not flight.done:
            flight.followers += 1
            return flight, False
        flight = self._flights[key] = Flight(key)
        return flight, True

    def finish(self, flight: Flight, answer: Answer | None) -> None:
        if self._flights.get(flight.key) is flight:
            del self._flights[flight.key]
        flight.resolve(answer)

    def watch(self, owner: object, flight: Flight) -> weakref.finalize:
        """Fail `flight` if `owner` (the leader's request context) is collected while it is still open."""
        return weakref.finalize(owner, _fail_if_open, weakref.ref(flight))

    def __len__(self) -> int:
        return len(self._flights)


def _fail_if_open(flight_ref: weakref.ref[Flight]) -> None:
    flight = flight_ref()
    if flight is not None and not flight.done:
        log.warning("single-flight leader vanished without finishing; followers released")
        flight.fail_soon()


class ReplicaLock:
    """The cross-replica single-flight lock for one key."""

    def __init__(self, store: KVStore, key: str, ttl: float) -> None:
        self.store = store
        self.key = key
        self.ttl = ttl
        self.token = os.urandom(16).hex().encode()
        self._held = False
        self._alive: Callable[[], bool] = lambda: True
        self._timer: asyncio.TimerHandle | None = None
        self._keeper: asyncio.Task[None] | None = None

    async def acquire(self, alive: Callable[[], bool] = lambda: True) -> bool | None:
        """True: this replica leads. False: another one does. None: the store is unavailable.

        While held, the lock is extended as long as `alive()` (the leader's flight is open); once
        that turns false without a release (a leader that vanished), the lock is dropped."""
        try:
            won = await self.store.set(self.key, self.token, ttl=self.ttl, nx=True)
        except StoreUnavailable:
            return None
        if won:
            self._keep(alive)
        return won

    async def acquire_and_read(self, guarded: str, alive: Callable[[], bool] = lambda: True
                               ) -> tuple[bool | None, bytes | None]:
        """`acquire()`, and the value of `guarded` read just after the lock was taken (one round trip
        where the store can): the entry another replica may have stored before we locked."""
        try:
            won, found = await self.store.set_then_get(self.key, self.token, guarded, ttl=self.ttl, nx=True)
        except StoreUnavailable:
            return None, None
        if won:
            self._keep(alive)
        return won, found

    def _keep(self, alive: Callable[[], bool]) -> None:
        # A long generation outlives a short lock: extend it while we still own it. A timer, not a task
        # sleeping in a loop: nearly every lock is released long before the first extension is due, and
        # a timer costs one heap entry to set and cancel where a task costs two turns of the loop.
        self._held, self._alive = True, alive
        self._arm()

    def _arm(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self.ttl / 3, self._due)

    def _due(self) -> None:
        self._timer = None
        self._keeper = asyncio.get_running_loop().create_task(self._extend())

    async def _extend(self) -> None:
        try:
            if not self._alive():
                await self.store.delete_if_equals(self.key, self.token)
                return
            if await self.store.get(self.key) != self.token:
                return
            await self.store.expire(self.key, self.ttl)
        except StoreUnavailable:
            pass  # tried again at the next tick
        if self._held:
            self._arm()

    def _stop_keeping(self) -> bool:
        """Stop extending; whether the lock was held (acquired and not yet released)."""
        held, self._held = self._held, False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        return held

    async def release(self) -> None:
        if self._stop_keeping():
            with contextlib.suppress(StoreUnavailable):
                await self.store.delete_if_equals(self.key, self.token)

    async def release_after_set(self, key: str, value: bytes, ttl: float | None) -> None:
        """Store what the lock guarded, then release it, in that order (one round trip where the store
        can): a waiter on another replica takes "no lock" for "the entry is in, or never will be".
        Raises StoreUnavailable when the value was not stored; the lock is released all the same."""
        if not self._stop_keeping():
            await self.store.set(key, value, ttl=ttl)
            return
        try:
            await self.store.set_then_delete_if_equals(key, value, ttl, self.key, self.token)
        except StoreUnavailable:
            with contextlib.suppress(StoreUnavailable):
                await self.store.delete_if_equals(self.key, self.token)
            raise


async def wait_for_remote(store: KVStore, entry_key: str, lock_key: str, max_wait: float) -> bytes | None:
    """Poll until another replica's leader stored the entry. None when its lock went away without
    an entry, the wait ran out, or the store failed: the caller then goes upstream itself."""
    deadline = time.monotonic() + max_wait
    delay = 0.005
    try:
        while time.monotonic() < deadline:
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, 0.2)
            # Lock first, then entry: a leader stores before it releases, so "no lock" followed by
            # "no entry" really means it ended without storing.
            holder = await store.get(lock_key)
            blob = await store.get(entry_key)
            if blob is not None or holder is None:
                return blob
    except StoreUnavailable:
        return None
    return None
