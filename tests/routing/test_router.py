"""The route stage and the failover hook, on a pool that is not started (no network)."""

from __future__ import annotations

import pytest

from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.metrics import ROUTE_DECISIONS
from gateway.pipeline import Pipeline
from gateway.protocols.openai_chat import OpenAIChatAdapter
from gateway.routing.pool import ReplicaPool
from gateway.routing.router import Router, RouteStage
from gateway.stores.memory import MemoryStore

URLS = ["http://10.0.0.1:8000", "http://10.0.0.2:8000", "http://10.0.0.3:8000"]


def make_stage() -> RouteStage:
    return RouteStage(Router(ReplicaPool(URLS), store=MemoryStore()))


def make_ctx(provider: str = "vllm", session: str | None = None, tenant: str = "acme") -> RequestContext:
    body = {"model": "vllm/llama", "messages": [{"role": "system", "content": "s " * 200},
                                                {"role": "user", "content": "hello"}]}
    ctx = RequestContext("req-1", OpenAIChatAdapter(), {}, {}, body, session=session, tenant=tenant)
    ctx.provider = provider
    ctx.upstream_body = dict(body, model="llama")
    ctx.upstream_base_url = "https://vendor.example/v1"
    return ctx


def decisions(reason: str) -> float:
    return sum(ROUTE_DECISIONS.labels("vllm", u[7:], reason)._value.get() for u in URLS)


async def test_other_providers_pass_through_untouched() -> None:
    stage = make_stage()
    ctx = make_ctx(provider="openai")
    assert await Pipeline([stage]).before(ctx) is None
    assert ctx.upstream_base_url == "https://vendor.example/v1" and ctx.replica is None and "replica" not in ctx.record
    await Pipeline([stage]).after(ctx)


async def test_the_stage_points_the_request_at_a_replica_and_records_it() -> None:
    stage = make_stage()
    ctx = make_ctx()
    before = decisions("least_loaded")
    await stage.before(ctx)
    replica = stage.router.pool.replicas[ctx.replica]
    assert ctx.upstream_base_url == replica.url + "/v1"
    assert ctx.record["replica"] == ctx.replica and ctx.record["route_reason"] == "least_loaded"
    assert decisions("least_loaded") == before + 1
    assert replica.inflight == 1
    ctx.status = 200
    await stage.after(ctx)
    assert replica.inflight == 0
    await stage.after(ctx)  # idempotent
    assert replica.inflight == 0


async def test_the_same_session_header_sticks_within_a_tenant() -> None:
    stage = make_stage()
    first = make_ctx(session="abc")
    await stage.before(first)
    for _ in range(3):
        again = make_ctx(session="abc")
        again.upstream_body["messages"] = [{"role": "user", "content": "a different conversation"}]
        await stage.before(again)
        assert again.replica == first.replica and again.record["route_reason"] == "session"


async def test_failover_moves_to_untried_replicas_then_gives_up() -> None:
    stage = make_stage()
    router = stage.router
    ctx = make_ctx()
    await stage.before(ctx)
    tried = [ctx.replica]
    before = decisions("failover")
    assert await router.failover(ctx, None)  # connect error: the first replica is ejected
    assert ctx.replica not in tried and ctx.record["route_reason"] == "failover"
    assert not router.pool.replicas[tried[0]].available
    tried.append(ctx.replica)
    assert await router.failover(ctx, 502)  # one 5xx: not ejected, but not retried on it either
    assert ctx.replica not in tried and router.pool.replicas[tried[1]].available
    tried.append(ctx.replica)
    assert not await router.failover(ctx, 500)  # nothing left
    assert decisions("failover") == before + 2
    assert all(router.pool.replicas[n].inflight == 0 for n in tried)
    ctx.status = 502
    await stage.after(ctx)  # the failed attempts were already closed
    assert all(router.pool.replicas[n].inflight == 0 for n in tried)


async def test_the_final_5xx_counts_toward_ejection() -> None:
    stage = make_stage()
    for _ in range(3):
        ctx = make_ctx(session="s")
        await stage.before(ctx)
        name = ctx.replica
        ctx.status = 500
        await stage.after(ctx)
    assert not stage.router.pool.replicas[name].available  # type: ignore[index]


async def test_no_available_replica_is_a_503() -> None:
    stage = make_stage()
    for replica in stage.router.pool.replicas.values():
        replica.healthy = False
    with pytest.raises(GatewayError) as err:
        await Pipeline([stage]).before(make_ctx())
    assert err.value.status == 503


async def test_failover_without_a_route_is_false() -> None:
    stage = make_stage()
    assert not await stage.router.failover(make_ctx(provider="openai"), 500)
