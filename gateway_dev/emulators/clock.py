"""The emulators' controllable clock.

Every TTL in the emulators (OpenAI retention, Anthropic 5m/1h, Gemini `expireTime`, DeepSeek retention,
vLLM has none) reads this clock, never `time.time()`, so a test moves time with `advance()` instead of
sleeping. Latency sleeps are real `asyncio.sleep`s and do not touch it: a test wants a 1-hour TTL to
pass instantly but a 50 ms time-to-first-token to be observable.
"""

from __future__ import annotations

import threading
import time


class Clock:
    """Wall-clock seconds (epoch) plus a manual offset; optionally frozen.

    A frozen clock only moves through `advance()`/`set()`, which makes TTL boundaries exact in tests
    (299 s still hits, 301 s misses). An unfrozen clock follows real time and still accepts
    `advance()`, which suits the demo and the subprocess server.
    """

    def __init__(self, *, frozen: bool = False, start: float | None = None) -> None:
        self._lock = threading.Lock()
        self._frozen = frozen
        self._base = time.time() if start is None else start
        self._offset = 0.0
        self._real0 = time.monotonic()

    @property
    def frozen(self) -> bool:
        return self._frozen

    def now(self) -> float:
        """Seconds since the epoch, as the emulators see it."""
        if self._frozen:
            return self._base + self._offset
        return self._base + (time.monotonic() - self._real0) + self._offset

    def advance(self, seconds: float) -> float:
        """Move time forward (a negative value moves it back; tests may want that); returns `now()`."""
        with self._lock:
            self._offset += float(seconds)
        return self.now()

    def set(self, epoch_seconds: float) -> None:
        """Jump to an absolute time."""
        with self._lock:
            self._offset += float(epoch_seconds) - self.now()

    def __repr__(self) -> str:
        return f"Clock(now={self.now():.3f}, frozen={self._frozen})"
