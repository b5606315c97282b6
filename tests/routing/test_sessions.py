from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.config import Settings
from gateway.routing.sessions import SessionTable, first_turns, session_key
from gateway.stores import open_store
from gateway.stores.memory import MemoryStore

if TYPE_CHECKING:
    from conftest import RedisServer


def body(*turns: str, **extra: object) -> dict:
    messages = [{"role": "system", "content": "sys"}]
    for i, text in enumerate(turns):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return {"model": "m", "messages": messages, **extra}


def test_key_precedence_header_then_cache_key_then_user_then_first_turns() -> None:
    b = body("q1", user="alice", prompt_cache_key="pck")
    assert session_key(b, "hdr") == session_key(body("other"), "hdr")
    assert session_key(b) == session_key(body("zzz", prompt_cache_key="pck"))
    assert session_key(body("q1", user="alice")) == session_key(body("q2", user="alice"))
    assert session_key(body("q1", user="alice")) != session_key(body("q1", user="bob"))
    assert session_key(body("q1")) != session_key(body("q2"))


def test_derived_key_is_the_same_for_every_turn_of_a_conversation() -> None:
    keys = {session_key(body(*[f"t{i}" for i in range(n)])) for n in range(1, 8, 2)}
    assert len(keys) == 1
    assert first_turns({"model": "m"}) == ""
    assert session_key({}) is None


def test_tenants_never_share_a_key() -> None:
    assert session_key(body("q"), "s1", scope="acme") != session_key(body("q"), "s1", scope="globex")


async def test_bindings_expire_after_the_idle_ttl() -> None:
    now = [0.0]
    store = MemoryStore(clock=lambda: now[0])
    table = SessionTable(store, "vllm", ttl=60, clock=lambda: now[0])
    await table.bind("k", "r1")
    now[0] = 50
    await table.touch("k", "r1")  # refreshed: lives 60 s from now
    now[0] = 100
    assert await table.get("k") == "r1"
    now[0] = 200
    assert await table.get("k") is None


async def test_binding_is_shared_through_redis_and_survives_its_outage_locally(own_redis: RedisServer) -> None:
    settings = Settings(redis_url=own_redis.url)
    a_store, b_store = open_store(settings), open_store(settings)
    try:
        a = SessionTable(a_store, "vllm", ttl=600)
        b = SessionTable(b_store, "vllm", ttl=600)
        await a.bind("k", "10.0.0.1:8000")
        assert await b.get("k") == "10.0.0.1:8000"
        await b.bind("k", "10.0.0.2:8000")  # b moved it (failover): a follows
        assert await a.get("k") == "10.0.0.2:8000"
        own_redis.stop()
        assert await a.get("k") == "10.0.0.2:8000"  # fail-open: the local copy answers
        await a.bind("k2", "10.0.0.3:8000")  # and new bindings still work locally
        assert await a.get("k2") == "10.0.0.3:8000"
    finally:
        await a_store.close()
        await b_store.close()


async def test_a_binding_written_behind_is_read_back_at_once_and_reaches_the_store() -> None:
    """The request path's form: the local copy answers while the store write is still under way (a store
    that is slow to answer), and the store has it once the write lands."""
    import asyncio

    class SlowStore(MemoryStore):
        async def set(self, key: str, value: bytes, ttl: float | None = None, nx: bool = False) -> bool:
            await asyncio.sleep(0.05)
            return await super().set(key, value, ttl=ttl, nx=nx)

        async def get(self, key: str) -> bytes | None:
            await asyncio.sleep(0)
            return await super().get(key)

    store = SlowStore()
    table = SessionTable(store, "vllm", ttl=60.0)
    table.bind_soon("s1", "r1")
    assert await store.get("gw:route:vllm:s1") is None  # not in the store yet ...
    assert await table.get("s1") == "r1"  # ... but this gateway already routes on it
    await table.drain()
    assert await store.get("gw:route:vllm:s1") == b"r1"
    other = SessionTable(store, "vllm", ttl=60.0)  # another gateway reads it from the store
    assert await other.get("s1") == "r1"
