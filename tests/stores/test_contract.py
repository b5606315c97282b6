"""The KVStore contract: the same behaviour from the embedded store and from Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from gateway.stores import KVStore

Key = Callable[..., str]


async def test_get_set_overwrite_and_binary_values(store: KVStore, k: Key) -> None:
    assert await store.get(k("a")) is None
    blob = bytes(range(256))  # not UTF-8: values are opaque bytes
    assert await store.set(k("a"), blob) is True
    assert await store.get(k("a")) == blob
    assert await store.set(k("a"), b"two") is True
    assert await store.get(k("a")) == b"two"


async def test_get_many_and_set_many_in_order(store: KVStore, k: Key) -> None:
    assert await store.get_many([]) == []
    await store.set_many([(k("m1"), b"one"), (k("m2"), bytes(range(256)))], ttl=30)
    assert await store.get_many([k("m1"), k("absent"), k("m2")]) == [b"one", None, bytes(range(256))]
    assert await store.get_many([k("m1")]) == [b"one"]
    left = await store.ttl(k("m2"))
    assert left is not None and 29 <= left <= 30
    await store.set_many([(k("m1"), b"uno")])  # no TTL: persistent, like set()
    assert await store.get(k("m1")) == b"uno" and await store.ttl(k("m1")) is None
    await store.set_many([])


async def test_set_nx_only_when_absent(store: KVStore, k: Key) -> None:
    assert await store.set(k("lock"), b"owner-1", ttl=5, nx=True) is True
    assert await store.set(k("lock"), b"owner-2", ttl=5, nx=True) is False
    assert await store.get(k("lock")) == b"owner-1"


async def test_ttl_expiry(store: KVStore, k: Key) -> None:
    await store.set(k("short"), b"v", ttl=0.15)
    await store.set(k("long"), b"v", ttl=60)
    await store.set(k("forever"), b"v")
    left = await store.ttl(k("long"))
    assert left is not None and 59 <= left <= 60
    assert await store.ttl(k("forever")) is None
    assert await store.ttl(k("absent")) is None
    await asyncio.sleep(0.3)
    assert await store.get(k("short")) is None
    assert await store.get(k("long")) == b"v"
    # An expired lock can be taken again.
    assert await store.set(k("short"), b"again", ttl=1, nx=True) is True


async def test_expire_and_plain_set_clears_ttl(store: KVStore, k: Key) -> None:
    assert await store.expire(k("absent"), 10) is False
    await store.set(k("a"), b"v")
    assert await store.expire(k("a"), 30) is True
    assert 29 <= (await store.ttl(k("a")) or 0) <= 30
    await store.set(k("a"), b"w")  # SET without a TTL makes the key persistent again
    assert await store.ttl(k("a")) is None


async def test_delete_counts_existing_keys(store: KVStore, k: Key) -> None:
    await store.set(k("a"), b"1")
    await store.set(k("b"), b"2")
    assert await store.delete(k("a"), k("b"), k("c")) == 2
    assert await store.get(k("a")) is None
    assert await store.delete(k("a")) == 0
    assert await store.delete() == 0


async def test_delete_if_equals_releases_only_own_lock(store: KVStore, k: Key) -> None:
    await store.set(k("lock"), b"mine", ttl=5)
    assert await store.delete_if_equals(k("lock"), b"theirs") is False
    assert await store.get(k("lock")) == b"mine"
    assert await store.delete_if_equals(k("lock"), b"mine") is True
    assert await store.get(k("lock")) is None
    assert await store.delete_if_equals(k("lock"), b"mine") is False


async def test_lock_then_read_and_store_then_release(store: KVStore, k: Key) -> None:
    # A single-flight leader: take the lock and read the entry it guards; store it, then release.
    assert await store.set_then_get(k("lock"), b"mine", k("entry"), ttl=5, nx=True) == (True, None)
    assert await store.set_then_get(k("lock"), b"theirs", k("entry"), ttl=5, nx=True) == (False, None)
    assert await store.get(k("lock")) == b"mine"
    assert await store.set_then_delete_if_equals(k("entry"), b"answer", 30, k("lock"), b"theirs") is False
    assert await store.get(k("lock")) == b"mine"  # not ours to release; the value is stored all the same
    assert await store.set_then_delete_if_equals(k("entry"), b"answer", 30, k("lock"), b"mine") is True
    assert await store.get(k("lock")) is None
    left = await store.ttl(k("entry"))
    assert left is not None and 29 <= left <= 30
    assert await store.set_then_get(k("lock"), b"next", k("entry"), ttl=5, nx=True) == (True, b"answer")


async def test_incr_with_and_without_ttl(store: KVStore, k: Key) -> None:
    assert await store.incr(k("n")) == 1
    assert await store.incr(k("n"), 41) == 42
    assert await store.ttl(k("n")) is None
    assert await store.incr(k("n"), -2, ttl=30) == 40
    assert 29 <= (await store.ttl(k("n")) or 0) <= 30
    assert await store.incr(k("n")) == 41  # a later incr without ttl keeps the expiry
    assert (await store.ttl(k("n")) or 0) > 28


async def test_hash_counters_keep_ints_exact_and_add_floats(store: KVStore, k: Key) -> None:
    await store.hincr(k("h"), {"requests": 1, "tokens": 1200, "cost": 0.25})
    await store.hincr(k("h"), {"requests": 1, "tokens": 30, "cost": 0.5}, ttl=60)
    got = await store.hgetall(k("h"))
    assert got["requests"] == "2"
    assert got["tokens"] == "1230"
    assert float(got["cost"]) == pytest.approx(0.75)
    assert 59 <= (await store.ttl(k("h")) or 0) <= 60
    await store.hset(k("h"), {"model": "gpt-4o", "blob": b"x", "n": 7, "f": 1.5})
    got = await store.hgetall(k("h"))
    assert (got["model"], got["blob"], got["n"], got["f"]) == ("gpt-4o", "x", "7", "1.5")
    assert await store.hgetall(k("none")) == {}


async def test_hset_with_a_ttl_sets_the_fields_and_the_expiry_together(store: KVStore, k: Key) -> None:
    await store.hset(k("ht"), {"n": 1, "last": 2.5}, 30)
    assert await store.hgetall(k("ht")) == {"n": "1", "last": "2.5"}
    assert 29 <= (await store.ttl(k("ht")) or 0) <= 30
    await store.hset(k("ht"), {"n": 2}, 90)  # the expiry is set again with the fields
    assert (await store.hgetall(k("ht")))["n"] == "2"
    assert 89 <= (await store.ttl(k("ht")) or 0) <= 90
    await store.hset(k("ht"), {"n": 3})  # without a ttl the expiry stays as it was (Redis HSET)
    assert 80 <= (await store.ttl(k("ht")) or 0) <= 90


async def test_sets(store: KVStore, k: Key) -> None:
    assert await store.sadd(k("s"), "a", "b") == 2
    assert await store.sadd(k("s"), "b", "c") == 1
    assert await store.smembers(k("s")) == {"a", "b", "c"}
    assert await store.srem(k("s"), "a", "zzz") == 1
    assert await store.smembers(k("s")) == {"b", "c"}
    assert await store.srem(k("s"), "b", "c") == 2
    assert await store.smembers(k("s")) == set()
    assert await store.srem(k("none"), "a") == 0


async def test_log_keeps_newest_first_and_caps(store: KVStore, k: Key) -> None:
    await store.log_append(k("log"), [b"r1", b"r2", b"r3"], maxlen=4)
    await store.log_append(k("log"), [b"r4", b"r5"], maxlen=4)
    assert await store.log_read(k("log"), 10) == [b"r5", b"r4", b"r3", b"r2"]
    assert await store.log_read(k("log"), 2) == [b"r5", b"r4"]
    assert await store.log_read(k("none"), 5) == []


async def test_scan_by_prefix_treats_glob_characters_literally(store: KVStore, k: Key) -> None:
    wanted = {k("gw:rc:{acme}:1"), k("gw:rc:{acme}:2")}
    for key in wanted:
        await store.set(key, b"v")
    await store.set(k("gw:rc:{acme-2}:1"), b"v")
    await store.set(k("gw:rc:{other}:1"), b"v")
    await store.sadd(k("gw:rc:{acme}:index"), "m")
    wanted.add(k("gw:rc:{acme}:index"))  # every kind of key is scanned, not only values
    found = {key async for key in store.scan(k("gw:rc:{acme}:"))}
    assert found == wanted
    await store.set(k("a*b[x]?"), b"v")
    await store.set(k("a-literal"), b"v")
    assert {key async for key in store.scan(k("a*b["))} == {k("a*b[x]?")}


async def test_scan_walks_many_keys(store: KVStore, k: Key) -> None:
    names = {k(f"many:{i}") for i in range(2500)}  # more than one SCAN page
    for name in names:
        await store.set(name, b"v")
    assert {key async for key in store.scan(k("many:"))} == names


async def test_ping(store: KVStore) -> None:
    assert await store.ping() is True


async def test_set_edge_cases(store: KVStore, k: Key) -> None:
    assert await store.sadd(k("s")) == 0
    assert await store.smembers(k("s")) == set()
    assert [key async for key in store.scan(k("s"))] == []  # no empty set was created
    assert await store.sadd(k("s2"), "x") == 1
    assert await store.srem(k("s2")) == 0
