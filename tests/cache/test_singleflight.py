"""In-process flights and the cross-replica lock, with real stores."""

from __future__ import annotations

import asyncio
import gc

import pytest

from gateway.answer import Answer, Finish, Start, TextDelta
from gateway.cache.singleflight import Flight, LeaderFailed, LocalFlights, ReplicaLock, wait_for_remote
from gateway.stores.base import StoreUnavailable
from gateway.stores.memory import MemoryStore

ANSWER = Answer(text="hello world", model="m", provider="openai", usage_raw={"completion_tokens": 2})


async def test_first_joiner_leads_the_rest_follow() -> None:
    flights = LocalFlights()
    lead, is_leader = flights.join("k")
    assert is_leader
    for _ in range(3):
        same, follows = flights.join("k")
        assert same is lead and not follows
    assert lead.followers == 3
    flights.finish(lead, ANSWER)
    assert len(flights) == 0
    again, is_leader = flights.join("k")  # a finished flight is never joined
    assert is_leader and again is not lead


async def test_followers_get_the_answer() -> None:
    flights = LocalFlights()
    lead, _ = flights.join("k")
    waiters = [asyncio.create_task(flights.join("k")[0].result(5)) for _ in range(10)]
    await asyncio.sleep(0.01)
    flights.finish(lead, ANSWER)
    assert await asyncio.gather(*waiters) == [ANSWER] * 10


async def test_stream_followers_get_live_events_then_the_rest() -> None:
    flight = Flight("k")
    got: list[object] = []

    async def follow() -> None:
        async for event in flight.subscribe(5):
            got.append(event)

    task = asyncio.create_task(follow())
    flight.publish(Start(model="m"))
    flight.publish(TextDelta("hello "))
    await asyncio.sleep(0.01)
    assert got == [Start(model="m"), TextDelta("hello ")]  # delivered before the answer is complete
    late = asyncio.create_task(_collect(flight))  # a late follower replays from the first event
    await asyncio.sleep(0.01)
    # The tap missed the tail: resolve() completes the feed from the answer.
    flight.resolve(ANSWER)
    await task
    assert got == [Start(model="m"), TextDelta("hello "), TextDelta("world"),
                   Finish(finish_reason="stop", usage_raw={"completion_tokens": 2})]
    assert await late == got


async def _collect(flight: Flight) -> list[object]:
    return [event async for event in flight.subscribe(5)]


async def test_leader_failure_releases_every_kind_of_follower() -> None:
    flight = Flight("k")
    flight.publish(Start(model="m"))
    stream = asyncio.create_task(_collect(flight))
    whole = asyncio.create_task(flight.result(5))
    first = asyncio.create_task(flight.first(5))
    await asyncio.sleep(0.01)
    flight.resolve(None)
    with pytest.raises(LeaderFailed):
        await stream
    assert await whole is None
    assert await first == "events"  # it had already seen an event when it asked
    assert await flight.first(5) == "failed"  # a newcomer learns it failed


async def test_silent_leader_times_out() -> None:
    flight = Flight("k")
    assert await flight.result(0.05) is None
    assert await flight.first(0.05) == "failed"
    with pytest.raises(LeaderFailed):
        await _collect_idle(flight)


async def _collect_idle(flight: Flight) -> list[object]:
    return [event async for event in flight.subscribe(0.05)]


async def test_vanished_leader_is_detected_by_garbage_collection() -> None:
    flights = LocalFlights()
    flight, _ = flights.join("k")

    class Ctx:
        pass

    owner = Ctx()
    flights.watch(owner, flight)
    waiter = asyncio.create_task(flight.result(5))
    await asyncio.sleep(0)
    del owner
    gc.collect()
    assert await asyncio.wait_for(waiter, 1) is None


async def test_replica_lock_is_exclusive_kept_alive_and_released() -> None:
    store = MemoryStore()
    a, b = ReplicaLock(store, "lock", ttl=0.15), ReplicaLock(store, "lock", ttl=0.15)
    assert await a.acquire() is True
    assert await b.acquire() is False
    await asyncio.sleep(0.4)  # longer than the TTL: the keeper extended it
    assert await store.get("lock") == a.token
    await b.release()  # not the owner: nothing happens
    assert await store.get("lock") == a.token
    await a.release()
    assert await store.get("lock") is None
    assert await b.acquire() is True
    await b.release()


async def test_a_held_lock_costs_no_task_until_an_extension_is_due() -> None:
    store = MemoryStore()
    lock = ReplicaLock(store, "lock", ttl=5)
    before = len(asyncio.all_tasks())
    assert await lock.acquire() is True
    assert len(asyncio.all_tasks()) == before  # a timer, not a sleeping task, per lock held
    await lock.release()
    assert lock._timer is None and lock._keeper is None and await store.get("lock") is None


async def test_a_vanished_leaders_lock_is_dropped_and_an_outage_only_skips_one_extension() -> None:
    class Flaky(MemoryStore):
        failures = 1

        async def expire(self, key: str, ttl: float) -> bool:
            if self.failures:
                self.failures -= 1
                raise StoreUnavailable("down for one call")
            return await super().expire(key, ttl)

    store = Flaky()
    open_ = True
    lock = ReplicaLock(store, "lock", ttl=0.15)
    assert await lock.acquire(lambda: open_) is True
    await asyncio.sleep(0.4)  # one extension failed, the next ones went through
    assert store.failures == 0 and await store.get("lock") == lock.token
    open_ = False  # the leader's flight is gone without a release
    await asyncio.sleep(0.1)
    assert await store.get("lock") is None
    await lock.release()


async def test_wait_for_remote_sees_the_entry_or_the_lock_going_away() -> None:
    store = MemoryStore()
    await store.set("lock", b"other", ttl=5)

    async def leader_stores() -> None:
        await asyncio.sleep(0.05)
        await store.set("entry", b"blob")
        await store.delete("lock")

    task = asyncio.create_task(leader_stores())
    assert await wait_for_remote(store, "entry", "lock", max_wait=2) == b"blob"
    await task

    await store.set("lock2", b"other", ttl=5)

    async def leader_fails() -> None:
        await asyncio.sleep(0.05)
        await store.delete("lock2")

    task = asyncio.create_task(leader_fails())
    assert await wait_for_remote(store, "entry2", "lock2", max_wait=2) is None
    await task
    await store.set("lock3", b"other", ttl=5)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await wait_for_remote(store, "entry3", "lock3", max_wait=0.2) is None
    assert loop.time() - t0 < 0.5
