"""Store deadlines follow the gateway's own event-loop lag, so a saturated gateway does not blame
(and trip the breaker of) a healthy Redis."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway.stores.looplag import LoopLag
from gateway.stores.redis import RedisStore


def _hog(loop: asyncio.AbstractEventLoop, stop: asyncio.Event, block: float) -> None:
    """Keep the loop busy: a callback that holds it for `block` seconds, again and again."""
    if stop.is_set():
        return
    time.sleep(block)
    loop.call_soon(_hog, loop, stop, block)


async def test_lag_rises_with_a_busy_loop_and_decays_after() -> None:
    lag = LoopLag(interval=0.01)
    lag.ensure_running()
    await asyncio.sleep(0.05)
    idle = lag.value
    # Bounds relative to what a loop turn costs here: on a loaded machine an idle loop is late too.
    assert idle < 0.02
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.call_soon(_hog, loop, stop, 0.03)
    await asyncio.sleep(0.3)
    busy = lag.value
    assert busy > 0.02
    stop.set()
    await asyncio.sleep(0.3)
    assert lag.value < busy / 2
    await lag.stop()


async def test_healthy_redis_answers_within_the_deadline_under_a_saturated_loop(redis_server) -> None:  # type: ignore[no-untyped-def]
    store = RedisStore(redis_server.url, timeout=0.01)  # a deadline shorter than one loop turn below
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    try:
        await store.set("lag:k", b"v")
        loop.call_soon(_hog, loop, stop, 0.02)
        await asyncio.sleep(0.2)  # the lag is measured
        assert store.deadline() > 0.05
        for _ in range(10):
            assert await store.get("lag:k") == b"v"
    finally:
        stop.set()
        await store.close()


async def test_a_stall_of_our_own_loop_is_not_blamed_on_redis(redis_server) -> None:  # type: ignore[no-untyped-def]
    from gateway.stores import StoreBusy
    from gateway.stores.breaker import CLOSED, CircuitBreaker

    inner = RedisStore(redis_server.url, timeout=0.05)
    store = CircuitBreaker(inner, threshold=1, cooldown=30)
    try:
        await store.set("stall:k", b"v")
        read = asyncio.create_task(store.get("stall:k"))
        await asyncio.sleep(0)  # the GET is sent and waits for its reply ...
        time.sleep(0.3)  # noqa: ASYNC251 - ... while this process stalls (a GC pause, a blocking call)
        assert await read == b"v"  # a read is simply asked again
        inner.lag.value = 0.0  # a fresh, unforeseen stall (after one, deadlines grow for a while)
        write = asyncio.create_task(store.set("stall:k", b"w"))
        await asyncio.sleep(0)
        time.sleep(0.3)  # noqa: ASYNC251 - the stall, on purpose
        with pytest.raises(StoreBusy):  # a write may have happened: reported, never repeated
            await write
        assert store.state == CLOSED  # neither stall counted against Redis
    finally:
        await store.close()


async def test_sampling_stops_while_nothing_asks_and_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.stores import looplag

    monkeypatch.setattr(looplag, "IDLE_S", 0.1)
    lag = LoopLag(interval=0.01)
    lag.ensure_running()
    first = lag._task
    for _ in range(10):  # in use: keeps sampling
        await asyncio.sleep(0.02)
        lag.ensure_running()
    assert lag._task is first and not first.done()  # type: ignore[union-attr]
    await asyncio.sleep(0.3)
    assert first.done()  # type: ignore[union-attr]
    lag.ensure_running()
    assert lag._task is not first and not lag._task.done()  # type: ignore[union-attr]
    await lag.stop()


async def test_the_stores_on_one_loop_share_one_sampler(redis_server) -> None:  # type: ignore[no-untyped-def]
    cache, flush = RedisStore(redis_server.url), RedisStore(redis_server.url)
    try:
        await cache.set("share:k", b"v")
        assert await flush.get("share:k") == b"v"
        assert cache.lag is flush.lag
        samplers = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "LoopLag._run"]  # type: ignore[union-attr]
        assert len(samplers) == 1
        await cache.close()  # stops the shared sampler; the other store's next call starts it again
        assert await flush.get("share:k") == b"v"
        assert flush.lag._task is not None and not flush.lag._task.done()
    finally:
        await flush.close()
