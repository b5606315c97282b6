"""Pool membership and passive health without live replicas (live ones: test_integration.py)."""

from __future__ import annotations

import pytest

from gateway.config import RoutingConfig, Settings
from gateway.routing.params import RoutingParams
from gateway.routing.pool import Replica, ReplicaPool


def test_static_endpoints_are_server_roots() -> None:
    pool = ReplicaPool.from_settings(Settings(vllm_endpoints=["http://a:8000/", "http://b:8001/v1", " "]))
    assert sorted(pool.replicas) == ["a:8000", "b:8001"]
    assert pool.replicas["b:8001"].url == "http://b:8001"
    assert pool.replicas["b:8001"].base_url == "http://b:8001/v1"


def test_env_list_reaches_the_pool() -> None:
    settings = Settings.load(env={"GATEWAY_VLLM_ENDPOINTS": "http://a:1, http://b:2"})
    assert sorted(ReplicaPool.from_settings(settings).replicas) == ["a:1", "b:2"]


def test_bad_endpoints_are_refused() -> None:
    with pytest.raises(ValueError, match="not a URL"):
        ReplicaPool(["a:8000"])
    with pytest.raises(ValueError, match="no host"):
        ReplicaPool(["dns+http://:8000"])


async def test_dns_entry_makes_one_replica_per_address() -> None:
    pool = ReplicaPool(["dns+http://localhost:18000"])
    assert pool.replicas == {}
    await pool._resolve()
    assert "127.0.0.1:18000" in pool.replicas
    assert all(r.dynamic for r in pool.replicas.values())


async def test_a_failed_lookup_keeps_the_members() -> None:
    pool = ReplicaPool(["dns+http://localhost:18000", "dns+http://no-such-host.invalid:80"])
    await pool._resolve()
    members = set(pool.replicas)
    await pool._resolve()
    assert set(pool.replicas) == members and members


def test_models_filter_candidates_and_the_vllm_prefix_is_accepted() -> None:
    pool = ReplicaPool(["http://a:1", "http://b:2"])
    pool.replicas["a:1"].models = {"llama"}
    pool.replicas["b:2"].models = {"qwen"}
    assert pool.serves("llama") and pool.serves("vllm/qwen") and not pool.serves("gpt-4o")
    assert [r.name for r in pool.candidates("vllm/qwen")] == ["b:2"]
    assert [r.name for r in pool.candidates("llama", exclude={"a:1"})] == []


def test_passive_health_connect_error_ejects_at_once_5xx_after_a_streak() -> None:
    now = [100.0]
    params = RoutingParams(eject_after_5xx=3, eject_base_s=2, eject_max_s=60)
    pool = ReplicaPool(["http://a:1", "http://b:2"], routing=RoutingConfig(), params=params, clock=lambda: now[0])
    reset: list[str] = []
    pool.on_reset(lambda r: reset.append(r.name))
    a, b = pool.replicas["a:1"], pool.replicas["b:2"]
    pool.record(a, ok=False, connect_error=True)
    assert not a.available and a.ejected_until == 102 and reset == ["a:1"]
    for status in (500, 502):
        pool.record(b, ok=False, status=status)
    pool.record(b, ok=True, status=200)  # a success resets the streak
    for status in (500, 503):
        pool.record(b, ok=False, status=status)
    assert b.available
    pool.record(b, ok=False, status=500)
    assert not b.available and reset == ["a:1", "b:2"]
    # every replica ejected, none down: all are still candidates (panic mode); down ones never are
    assert [r.name for r in pool.candidates("m")] == ["a:1", "b:2"]
    a.healthy = False
    assert [r.name for r in pool.candidates("m")] == ["b:2"]
    b.healthy = False
    assert pool.candidates("m") == []


def test_repeated_ejections_last_longer() -> None:
    now = [0.0]
    pool = ReplicaPool(["http://a:1"], params=RoutingParams(eject_base_s=2, eject_max_s=5), clock=lambda: now[0])
    a = pool.replicas["a:1"]
    durations = []
    for _ in range(3):
        pool.eject(a, "test")
        durations.append(a.ejected_until - now[0])
        a.ejected = False  # as a passing health check would
    assert durations == [2, 4, 5]


def test_load_counts_this_gateway_and_the_others() -> None:
    r = Replica("http://a:1")
    r.inflight, r.foreign = 2, 3.0
    assert r.load == 5
