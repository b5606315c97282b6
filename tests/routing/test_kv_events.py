"""KV-event mode against live emulated vLLM replicas publishing vLLM's ZMQ stream: when the prediction is
wrong (another gateway moved a prefix, the cache was flushed or the replica restarted) the events route
correctly; when the stream stops the router falls back to the prediction."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

pytest.importorskip("zmq")

from gateway.config import RoutingConfig
from gateway.routing.kv_events import KVEventIndex
from gateway.routing.pool import Replica, ReplicaPool
from gateway.routing.router import Router
from gateway.routing.sessions import session_key
from gateway.stores.memory import MemoryStore
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.emulators.vllm_app import VLLMConfig

from .conftest import MODEL

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def emu() -> AsyncIterator[EmulatorSet]:
    configs = [VLLMConfig(served_model_names=[MODEL], kv_capacity_blocks=400, kv_events="tcp://127.0.0.1:*")
               for _ in range(2)]
    emu = EmulatorSet(vllm_configs=configs, latency="zero")
    await emu.__aenter__()
    try:
        yield emu
    finally:
        await emu.__aexit__(None, None, None)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def router_for(emu: EmulatorSet, http: aiohttp.ClientSession, events: bool) -> Router:
    params: dict[str, Any] = {"session_affinity": False, "kv_events_stale_s": 0.5}
    if events:
        params["kv_events_endpoints"] = {u[7:]: r.kv_events_endpoint for u, r in zip(emu.vllm_urls, emu.replicas,
                                                                                      strict=True)}
    routing = RoutingConfig(health_interval=60, metrics_interval=60, params=params)
    router = Router(ReplicaPool(emu.vllm_urls, routing=routing, session=http), store=MemoryStore())
    await router.start()
    return router


def prompt(tag: str, question: str, n: int = 300) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 4, "messages": [
        {"role": "system", "content": " ".join(f"{tag}{i}" for i in range(n))},
        {"role": "user", "content": question}]}


async def send(http: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> int:
    async with http.post(url + "/v1/chat/completions", json=body) as resp:
        data = await resp.json()
        assert resp.status == 200, data
        return int(data["usage"]["prompt_tokens_details"]["cached_tokens"])


async def routed(http: aiohttp.ClientSession, router: Router, body: dict[str, Any]) -> str:
    """Route, send and end `body` as the gateway does (the request's end closes its in-flight entry)."""
    req = router.request(body, session_key(body))
    replica = (await router.decide(req)).replica
    router.begin(replica)
    await send(http, replica.url, body)
    router.end(replica, ok=True, status=200, request=req)
    return replica.name


async def chosen(router: Router, body: dict[str, Any]) -> Replica:
    """The replica `router` picks for `body`, the request then ended unsent (nothing of it stays in flight)."""
    req = router.request(body, session_key(body))
    replica = (await router.decide(req)).replica
    router.end(replica, ok=True, status=200, request=req)
    return replica


async def settle(router: Router, names: list[str]) -> None:
    """Until the events of what just happened have arrived."""
    assert router.kv_events is not None
    for _ in range(250):
        await asyncio.sleep(0.02)
        if all(router.kv_events.fresh(n) for n in names):
            await asyncio.sleep(0.1)
            return
    raise AssertionError(f"no KV events arrived: {[(n, vars_of(router.kv_events.replicas.get(n))) for n in names]}")


def vars_of(held: Any) -> Any:
    return None if held is None else {k: getattr(held, k) for k in ("seq", "lost", "pending_since", "last_event")}


def test_events_decode_both_wire_forms() -> None:
    index = KVEventIndex()
    stored = {"type": "BlockStored", "block_hashes": [11, 12], "parent_block_hash": None,
              "token_ids": list(range(32)), "block_size": 16, "lora_id": None, "medium": "GPU"}
    index.apply("a", 0, {"ts": 1.0, "events": [stored], "data_parallel_rank": 0})
    index.apply("b", 0, [1.0, [["BlockStored", [21, 22], None, list(range(32)), 16, None]]])
    assert index.shares(list(range(40)), ["a", "b"]) == {"a": 0.8, "b": 0.8}
    index.apply("a", 1, {"ts": 2.0, "events": [{"type": "BlockRemoved", "block_hashes": [12], "medium": "GPU"}]})
    index.apply("b", 1, [2.0, [["AllBlocksCleared"]]])
    assert index.shares(list(range(40)), ["a", "b"]) == {"a": 0.4, "b": 0.0}
    index.apply("a", 0, {"ts": 3.0, "events": []})  # the sequence went back: a restarted engine
    assert index.shares(list(range(40)), ["a"]) == {"a": 0.0}
    index.apply("late", 7, {"ts": 4.0, "events": [stored]})  # joined a stream under way: earlier blocks unknown
    assert not index.fresh("late") and index.shares(list(range(40)), ["late"]) == {}


async def test_events_route_right_where_the_prediction_is_wrong(emu: EmulatorSet,
                                                                http: aiohttp.ClientSession) -> None:
    precise = await router_for(emu, http, events=True)
    predicted = await router_for(emu, http, events=False)
    try:
        names = [u[7:] for u in emu.vllm_urls]
        # Both routers see the same traffic: the group's first prompt lands on one replica.
        await asyncio.sleep(1.0)  # the SUB sockets connect (what is published before that is missed)
        home = await routed(http, precise, prompt("g", "first?"))
        assert await routed(http, predicted, prompt("g", "first?")) == home
        other = next(n for n in names if n != home)
        # Another gateway serves the group on the other replica, and floods the home replica, which evicts it.
        await send(http, "http://" + other, prompt("g", "elsewhere?"))
        for k in range(4):
            await send(http, "http://" + home, prompt(f"flood{k}-", "x", 700))
        await settle(precise, names)
        # The prediction still believes the home replica holds the group; the events know better.
        assert await chosen(precise, prompt("g", "next?")) == precise.pool.replicas[other]
        assert await chosen(predicted, prompt("g", "next?")) == predicted.pool.replicas[home]
        assert await send(http, "http://" + other, prompt("g", "next?")) > 500  # and it really is cached there

        # Flushed by a restart (same port, empty cache, sequence from 0): the group is gone from `other`.
        emu.stop_vllm(names.index(other))
        emu.start_vllm(names.index(other), fresh=True)
        await send(http, "http://" + home, prompt("g", "refill?"))  # another gateway warms the home replica
        await send(http, "http://" + other, prompt("h", "unrelated?", 100))  # the restarted one's first batch
        await settle(precise, names)
        assert await chosen(precise, prompt("g", "after?")) == precise.pool.replicas[home]
    finally:
        await precise.stop()
        await predicted.stop()


async def test_router_falls_back_to_the_prediction_when_the_stream_stops(emu: EmulatorSet,
                                                                        http: aiohttp.ClientSession) -> None:
    router = await router_for(emu, http, events=True)
    try:
        names = [u[7:] for u in emu.vllm_urls]
        await asyncio.sleep(1.0)  # the SUB sockets connect (what is published before that is missed)
        home = await routed(http, router, prompt("g", "first?"))
        await settle(router, [home])
        assert router.kv_events is not None
        replica = emu.replicas[names.index(home)]
        replica.events.paused = True  # the stream stops; the replica keeps serving
        assert await routed(http, router, prompt("g", "while silent?")) == home
        await asyncio.sleep(0.7)  # > kv_events_stale_s with a placed request and no batch
        assert not router.kv_events.fresh(home)
        # Scored by the prediction again: the group's next prompt still goes home (the index holds it).
        req = router.request(prompt("g", "again?"), "k")
        decision = await router.decide(req)
        assert decision.replica.name == home and home not in (req.event_share or {})
        router.end(decision.replica, ok=True)
        replica.events.paused = False
        await routed(http, router, prompt("g", "resumed?"))
        for _ in range(150):  # until the first batch after the gap has arrived
            if router.kv_events.replicas[home].lost:
                break
            await asyncio.sleep(0.02)
        # Batches were lost (a sequence gap): what the replica stored meanwhile is unknown, so the prediction
        # keeps scoring it (until its cache starts over: a restart or AllBlocksCleared, see the decode test).
        assert router.kv_events.replicas[home].lost and not router.kv_events.fresh(home)
        assert (await routed(http, router, prompt("g", "still predicted?"))) == home
        # A restart (same port, empty cache, the sequence from 0 again) makes the stream trustworthy again.
        emu.stop_vllm(names.index(home))
        emu.start_vllm(names.index(home), fresh=True)
        async with aiohttp.ClientSession() as fresh_http:  # the old keep-alive connections died with it
            await send(fresh_http, "http://" + home, prompt("h", "first after restart?", 100))
        await settle(router, [home])
        assert not router.kv_events.replicas[home].lost
    finally:
        await router.stop()


async def test_a_session_staying_on_its_replica_is_not_tokenized(emu: EmulatorSet,
                                                                 http: aiohttp.ClientSession) -> None:
    """The events' shares cost a tokenize call before the send; a bound session whose replica is not
    overloaded is answered by its binding, so it makes none. A new session still does."""
    routing = RoutingConfig(health_interval=60, metrics_interval=60, params={
        "kv_events_stale_s": 5.0,
        "kv_events_endpoints": {u[7:]: r.kv_events_endpoint for u, r in zip(emu.vllm_urls, emu.replicas,
                                                                            strict=True)}})
    router = Router(ReplicaPool(emu.vllm_urls, routing=routing, session=http), store=MemoryStore())
    await router.start()
    try:
        names = [u[7:] for u in emu.vllm_urls]
        await asyncio.sleep(1.0)  # the SUB sockets connect
        for n in range(2):  # a first request on each replica starts both streams
            await send(http, emu.vllm_urls[n], prompt(f"warm{n}", "hi?", n=20))
        await settle(router, names)

        def tokenized() -> int:
            return sum(emu.calls(f"vllm{i}.tokenize") for i in range(2))

        body = prompt("s", "first turn?")
        before = tokenized()
        home = await router.choose(body, session="conv-7")
        assert tokenized() == before + 1  # a new session is scored on the events
        for _ in range(3):
            assert (await router.choose(body, session="conv-7")).name == home.name
        assert tokenized() == before + 1  # its next turns go by the binding, with no tokenize call
    finally:
        await router.stop()
