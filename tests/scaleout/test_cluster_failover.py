"""A Redis Cluster primary killed under load, through the gateway and the official OpenAI SDK.

The cluster is real: 3 primaries with one replica each (`redis-server --cluster-enabled yes`,
joined with `redis-cli --cluster create`). Each tenant's response-cache keys share one slot (the
`{tenant}` hash tag), so killing the primary that owns acme's slot takes acme's entries away while
another tenant's stay on a live primary. The victim's replica is told not to take over at first
(`cluster-replica-no-failover yes`), which holds the outage open for as long as the test needs;
then it is allowed to, and Redis Cluster's own failover promotes it.

What must hold: no request fails at any point; acme's requests are proxied as misses while its
shard is down; the other tenant keeps hitting throughout (one circuit breaker per primary); after
the failover acme's stored answers hit again (the replica had them); the killed node, restarted,
rejoins the cluster.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import openai
import pytest
from redis.crc import key_slot

from gateway.stores.cluster import NodeBreakers
from gateway_dev.localrun import LocalGateway
from gateway_dev.redis_servers import RedisClusterProcs, poll

CANDIDATES = ["globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell", "cyberdyne"]


@pytest.fixture
def cluster() -> Iterator[RedisClusterProcs]:
    with RedisClusterProcs(masters=3, replicas=1, node_timeout_ms=1000) as c:
        yield c




def test_primary_killed_mid_run_fails_open_per_shard_then_recovers(
        cluster: RedisClusterProcs, emulators, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    victim = cluster.primary_of("gw:rc:{acme}:x")
    other = next(t for t in CANDIDATES if cluster.primary_of(f"gw:rc:{{{t}}}:x") is not victim)
    assert key_slot(b"{acme}") != key_slot(other.encode())
    (standby,) = cluster.replicas_of(victim)
    with standby.client() as r:
        r.config_set("cluster-replica-no-failover", "yes")  # hold the outage open until we say so

    keys = {"acme": "sk-acme-fo", other: f"sk-{other}-fo"}
    gw = LocalGateway(emulators, {t: {"key": k} for t, k in keys.items()}, tmp_path, redis_url=cluster.url).start()
    clients = {t: openai.OpenAI(base_url=gw.url + "/v1", api_key=k, max_retries=0, timeout=30) for t, k in keys.items()}
    warm = {t: [f"Cluster failover {t} {i} {uuid.uuid4().hex[:6]}" for i in range(4)] for t in keys}
    seen: list[tuple[str, str | None, float]] = []  # (tenant, x-gateway-cache, when) of warm prompts
    failures: list[str] = []
    stop = threading.Event()

    def ask(tenant: str, prompt: str) -> str | None:
        raw = clients[tenant].chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}])
        raw.parse()
        return raw.headers.get("x-gateway-cache")

    def client(n: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            tenant = list(keys)[(n + i) % 2]
            fresh = i % 4 == 0  # a new question now and then: stored, looked up, coalesced
            prompt = f"fresh {n} {i} {uuid.uuid4().hex}" if fresh else warm[tenant][i % 4]
            try:
                status = ask(tenant, prompt)
            except Exception as exc:  # collected: nothing may fail
                failures.append(repr(exc))
                continue
            if not fresh:
                seen.append((tenant, status, time.monotonic()))

    def statuses(tenant: str, after: float) -> list[str | None]:
        return [s for t, s, at in list(seen) if t == tenant and at > after]

    workers = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    try:
        for tenant, prompts in warm.items():
            for p in prompts:
                assert ask(tenant, p) == "miss"
                # The store runs after the response is sent: a quick second ask may still ride on the
                # first one's flight (reported as a coalesced miss) before the entry lands.
                assert poll(lambda p=p, t=tenant: ask(t, p) == "response-hit", 10)
        time.sleep(0.5)  # replication to the replicas is asynchronous
        for w in workers:
            w.start()

        victim.stop()  # killed like a crash while four clients keep sending
        killed = time.monotonic()
        settle = killed + 0.5  # requests already past their lookup when the node died
        assert poll(lambda: len(statuses("acme", settle)) >= 12 and len(statuses(other, settle)) >= 12, 60), \
            "requests stalled while a primary was down"
        assert set(statuses("acme", settle)) == {"miss"}  # fail-open: proxied, not failed
        assert set(statuses(other, settle)) == {"response-hit"}  # the other shards keep serving
        assert httpx2.get(gw.url + "/readyz").status_code == 200
        store = gw.components.store
        assert isinstance(store, NodeBreakers)

        with standby.client() as r:
            r.config_set("cluster-replica-no-failover", "no")  # now the replica takes over
        cluster.wait_healthy(60)
        promoted = time.monotonic()
        assert poll(lambda: "response-hit" in statuses("acme", promoted), 30), statuses("acme", promoted)
        assert set(statuses(other, killed)) == {"response-hit"}

        victim.start()  # the old primary comes back and rejoins, as a replica
        cluster.wait_healthy(60)
        assert cluster.primary_of("gw:rc:{acme}:x") is standby
        stop.set()
        for w in workers:
            w.join(30)
        assert failures == [], failures[:5]
        # the client's slot map and the breaker settle within a few requests of the rejoin
        assert poll(lambda: ask("acme", warm["acme"][0]) == "response-hit", 10)
    finally:
        stop.set()
        for w in workers:
            if w.is_alive():
                w.join(30)
        for c in clients.values():
            c.close()
        gw.stop()
