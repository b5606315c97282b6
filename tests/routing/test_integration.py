"""The router against live emulated vLLM replicas: discovery, stickiness that the replicas' own prefix
caches confirm, grouping, the load guard fed by scraped metrics, ejection, failover and re-admission."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from gateway.config import RoutingConfig
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.metrics import PREFIX_HIT_RATE, ROUTE_DECISIONS
from gateway.protocols.openai_chat import OpenAIChatAdapter
from gateway.routing.pool import ReplicaPool
from gateway.routing.router import Router, RouteStage
from gateway.stores.memory import MemoryStore

from .conftest import MODEL, Fleet

MakeFleet = Callable[..., Awaitable[Fleet]]

FAST = {"eject_base_s": 0.2, "unhealthy_after": 1, "probe_timeout": 1.0}


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def make_router(fleet: Fleet, http: aiohttp.ClientSession, health_interval: float = 0.1,
                      **params: Any) -> Router:
    routing = RoutingConfig(health_interval=health_interval, metrics_interval=0.1, params={**FAST, **params})
    router = Router(ReplicaPool(fleet.urls, routing=routing, session=http), store=MemoryStore())
    await router.start()
    return router


def words(tag: str, n: int) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


async def call(http: aiohttp.ClientSession, stage: RouteStage, messages: list[dict[str, str]],
               session: str | None = None) -> tuple[RequestContext, dict[str, Any]]:
    """One request the way the gateway makes it: route stage, relay with failover, stage after()."""
    body = {"model": MODEL, "messages": messages, "max_tokens": 8}
    ctx = RequestContext("r", OpenAIChatAdapter(), {}, {}, body, session=session, tenant="t")
    ctx.provider, ctx.upstream_body, ctx.upstream_path = "vllm", body, "/chat/completions"
    await stage.before(ctx)
    data: dict[str, Any] = {}
    while True:
        try:
            async with http.post(ctx.upstream_base_url + ctx.upstream_path, json=body) as resp:
                data = await resp.json()
                ctx.status = resp.status
            if ctx.status >= 500 and await stage.router.failover(ctx, ctx.status):
                continue
            break
        except aiohttp.ClientConnectionError:
            if await stage.router.failover(ctx, None):
                continue
            ctx.status = 502
            break
    await stage.after(ctx)
    return ctx, data


async def conversation(http: aiohttp.ClientSession, stage: RouteStage, system: str, turns: int,
                       session: str | None = None, tag: str = "") -> list[tuple[str, int]]:
    """(replica, cached prompt tokens) of each turn of an append-only conversation."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": words(f"{tag}q0-", 60)}]
    out = []
    for t in range(turns):
        ctx, data = await call(http, stage, messages, session)
        assert ctx.status == 200, data
        out.append((ctx.replica or "", data["usage"]["prompt_tokens_details"]["cached_tokens"]))
        messages += [{"role": "assistant", "content": data["choices"][0]["message"]["content"]},
                     {"role": "user", "content": words(f"{tag}q{t + 1}-", 40)}]
    return out


async def test_pool_discovers_models_and_reads_metrics(fleet: MakeFleet, http: aiohttp.ClientSession) -> None:
    replicas = await fleet(2, kv_capacity_blocks=512)
    router = await make_router(replicas, http)
    try:
        pool = router.pool
        assert pool.serves(MODEL) and pool.serves(f"vllm/{MODEL}") and not pool.serves("other")
        assert pool.models() == {MODEL}
        assert router.policy.index.capacity(replicas.urls[0][7:]) == 512  # type: ignore[attr-defined]
        stage = RouteStage(router)
        await conversation(http, stage, words("sys", 300), 4)
        await pool.refresh()
        assert PREFIX_HIT_RATE.labels("vllm")._value.get() > 0.5
    finally:
        await router.stop()


async def test_append_only_sessions_stick_and_hit_the_replica_cache(fleet: MakeFleet,
                                                                   http: aiohttp.ClientSession) -> None:
    replicas = await fleet(4)
    router = await make_router(replicas, http)
    try:
        stage = RouteStage(router)
        homes = set()
        for s in range(6):
            turns = await conversation(http, stage, words(f"sys{s}-", 200), 5, tag=f"s{s}")
            assert len({r for r, _ in turns}) == 1, turns
            assert all(cached > 0 for _, cached in turns[1:])  # the replica had the conversation cached
            homes.add(turns[0][0])
        assert len(homes) >= 3  # sessions spread over the replicas
    finally:
        await router.stop()


async def test_sessions_sharing_a_system_prompt_group(fleet: MakeFleet, http: aiohttp.ClientSession) -> None:
    replicas = await fleet(4)
    router = await make_router(replicas, http)
    try:
        stage = RouteStage(router)
        systems = [words(f"group{g}-", 400) for g in range(4)]
        placed: dict[int, set[str]] = {g: set() for g in range(4)}
        for q in range(5):
            for g, system in enumerate(systems):
                ctx, data = await call(http, stage, [{"role": "system", "content": system},
                                                     {"role": "user", "content": f"question {q}?"}])
                placed[g].add(ctx.replica or "")
                if q:
                    assert data["usage"]["prompt_tokens_details"]["cached_tokens"] > 300
        assert all(len(names) == 1 for names in placed.values()), placed
    finally:
        await router.stop()


async def test_overload_seen_in_scraped_metrics_breaks_stickiness(fleet: MakeFleet,
                                                                 http: aiohttp.ClientSession) -> None:
    """Another gateway's requests fill the session's replica: its scraped running/waiting count moves the session."""
    replicas = await fleet(3, max_num_seqs=2)
    router = await make_router(replicas, http, balance_abs=4)
    try:
        stage = RouteStage(router)
        system = words("sys", 200)
        home = (await conversation(http, stage, system, 2, session="s1"))[0][0]
        slow = {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": 200}
        headers = {"x-emulator-latency": "itl=0.003", "x-emulator-output-tokens": "200"}

        async def other_gateway() -> int:
            async with http.post(replicas.url(home) + "/v1/chat/completions", json=slow, headers=headers) as resp:
                await resp.read()
                return resp.status

        other = [asyncio.create_task(other_gateway()) for _ in range(6)]  # 2 running, 4 waiting
        try:
            for _ in range(50):  # until a scrape sees them
                await asyncio.sleep(0.05)
                if router.pool.replicas[home].foreign >= 5:
                    break
            guarded = sum(ROUTE_DECISIONS.labels("vllm", r, "load_guard")._value.get() for r in router.pool.replicas)
            moved = await conversation(http, stage, system, 2, session="s1")
            assert all(r != home for r, _ in moved)
            assert sum(ROUTE_DECISIONS.labels("vllm", r, "load_guard")._value.get()
                       for r in router.pool.replicas) == guarded + 1  # moved once, then sticky again
        finally:
            assert await asyncio.gather(*other) == [200] * 6
    finally:
        await router.stop()


async def test_killed_replica_is_ejected_sessions_move_and_it_comes_back(fleet: MakeFleet,
                                                                         http: aiohttp.ClientSession) -> None:
    replicas = await fleet(3)
    router = await make_router(replicas, http)
    try:
        stage = RouteStage(router)
        pool = router.pool
        system = words("sys", 200)
        home = (await conversation(http, stage, system, 2, session="victim"))[0][0]
        await replicas.kill(home)
        failovers = sum(ROUTE_DECISIONS.labels("vllm", r, "failover")._value.get() for r in pool.replicas)
        # The next turns succeed elsewhere: a connect error, a failover, then the session sticks to its new home.
        after = await conversation(http, stage, system, 3, session="victim")
        new_home = after[0][0]
        assert new_home != home and {r for r, _ in after} == {new_home}
        assert not pool.replicas[home].available
        assert sum(ROUTE_DECISIONS.labels("vllm", r, "failover")._value.get() for r in pool.replicas) > failovers
        # Restarted (empty cache): health checks re-admit it and new work reaches it again.
        await replicas.restart(home)
        for _ in range(100):
            await asyncio.sleep(0.05)
            if pool.replicas[home].available:
                break
        assert pool.replicas[home].available
        for name, replica in pool.replicas.items():
            replica.inflight = 0 if name == home else 3  # the others are busy: new sessions go to it
        ctx, _ = await call(http, stage, [{"role": "user", "content": words("fresh", 50)}])
        assert ctx.status == 200 and ctx.replica == home
    finally:
        await router.stop()


async def test_all_replicas_down_answers_503_and_failover_stops(fleet: MakeFleet, http: aiohttp.ClientSession) -> None:
    replicas = await fleet(2)
    router = await make_router(replicas, http, health_interval=60)  # health checks only when the test says
    try:
        stage = RouteStage(router)
        for url in replicas.urls:
            await replicas.kill(url[7:])
        ctx, _ = await call(http, stage, [{"role": "user", "content": "hello there"}])
        assert ctx.status == 502  # both were tried, then the relay gives up
        assert all(r.ejected for r in router.pool.replicas.values())
        # Every replica ejected but none reported down yet: they are still tried (panic mode) ...
        ctx, _ = await call(http, stage, [{"role": "user", "content": "hello again"}])
        assert ctx.status == 502 and ctx.replica is not None
        # ... until the health checks agree they are down: then a clean 503 without trying.
        await router.pool.refresh()
        with pytest.raises(GatewayError) as err:
            await call(http, stage, [{"role": "user", "content": "and again"}])
        assert err.value.status == 503
    finally:
        await router.stop()
