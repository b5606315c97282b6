"""The token counter's load on first use: one load in a worker thread, shared by every request that
arrives meanwhile, while the event loop keeps running; a waiter that goes away does not stop it."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gateway.provider_cache import tokens
from gateway.provider_cache.tokens import TokenCounter, estimate


async def test_concurrent_requests_share_one_load_and_the_loop_keeps_running(monkeypatch: pytest.MonkeyPatch
                                                                             ) -> None:
    counter = TokenCounter()
    real, loads, threads = TokenCounter.load, [], []

    def slow_load(self: TokenCounter) -> bool:
        loads.append(1)
        threads.append(threading.current_thread())
        time.sleep(0.2)  # longer than the ticks below: a load on the loop would stop them
        return real(self)

    monkeypatch.setattr(TokenCounter, "load", slow_load)
    assert counter.state == "on first use" and counter.count("hello world") == estimate("hello world")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.get_running_loop().create_task(tick())
    waiters = [asyncio.get_running_loop().create_task(counter.ensure()) for _ in range(5)]
    await asyncio.sleep(0.05)
    assert counter.state == "loading"
    assert await asyncio.gather(*waiters) == [True] * 5
    ticker.cancel()
    assert loads == [1] and threads[0] is not threading.main_thread()
    assert ticks >= 10, ticks  # the loop ran through the load
    assert counter.state == "loaded" and counter.count("hello world") == 2  # o200k's count, not the estimate
    assert await counter.ensure()


async def test_a_cancelled_waiter_leaves_the_load_to_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = TokenCounter()
    real = TokenCounter.load

    def slow_load(self: TokenCounter) -> bool:
        time.sleep(0.1)
        return real(self)

    monkeypatch.setattr(TokenCounter, "load", slow_load)
    first = asyncio.get_running_loop().create_task(counter.ensure())
    await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await counter.ensure() and counter.exact


async def test_without_the_file_it_counts_by_estimate_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_bundled_dir", lambda: None)
    counter = TokenCounter()
    assert not await counter.ensure()
    assert counter.state == "estimates" and counter.count("héllo") == estimate("héllo")
