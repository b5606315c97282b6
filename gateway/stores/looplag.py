"""How late the event loop runs its timers: the gateway's own queueing, as opposed to the store's.

A store call's deadline is meant to catch a slow or hung store. When the gateway itself is
saturated, every await takes longer (the reply sits in the socket until the loop gets to it), and a
fixed 100 ms deadline then fails calls to a healthy Redis; the circuit breaker opens, the cache
turns into misses, the misses add upstream work, and the overload feeds itself. Stores therefore
extend their deadline by a few times the current lag, up to a cap.

The lag is the loop's, not a store's: every store on one loop reads the one sampler `for_loop` gives
(the response cache's store and the usage flush's were two samplers waking 50 times a second each).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref

IDLE_S = 2.0  # no store call for this long: sampling stops until the next call


class LoopLag:
    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.value = 0.0  # seconds; rises at once, decays over a few samples
        self._task: asyncio.Task[None] | None = None
        self._uses = 0

    def ensure_running(self) -> None:
        """Start sampling on the running loop (idempotent; cheap enough for every call)."""
        self._uses += 1
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        seen, used_at = self._uses, loop.time()
        while True:
            start = loop.time()
            await asyncio.sleep(self.interval)
            now = loop.time()
            late = max(0.0, now - start - self.interval)
            # A decaying maximum, not an average: a saturated loop's turns vary a lot, and the
            # deadline must cover the slow turns (half-life about six samples).
            self.value = max(late, 0.89 * self.value)
            # Fifty wakeups a second cost CPU while nothing asks for the lag: an idle process stops
            # sampling, and the next store call starts it again.
            if self._uses != seen:
                seen, used_at = self._uses, now
            elif now - used_at >= IDLE_S:
                return

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await self._task
            self._task = None


_PER_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopLag] = weakref.WeakKeyDictionary()


def for_loop(loop: asyncio.AbstractEventLoop) -> LoopLag:
    """The one sampler of `loop`, shared by every store that runs on it."""
    lag = _PER_LOOP.get(loop)
    if lag is None:
        lag = _PER_LOOP[loop] = LoopLag()
    return lag
