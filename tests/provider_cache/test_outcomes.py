"""Observed outcomes per family: a family stops writing after UNREAD_LIMIT unread writes, probes with
doubling gaps (two requests with markers each time), resumes on a read; the probe bound; the store."""

from __future__ import annotations

import pytest

from gateway.provider_cache.outcomes import (
    MIN_EVIDENCE,
    PROBE_START,
    UNREAD_LIMIT,
    Evidence,
    Outcome,
    OutcomeStore,
    max_unread_writes,
    outcome_key,
    probe_bound,
)
from gateway.stores import KVStore


async def simulate(store: OutcomeStore, key: str, n: int, reads: bool) -> list[str]:
    """n requests of one family; each writes when its gate lets it, and reads when `reads` and the
    previous request wrote. Returns the gates."""
    gates, wrote_before = [], False
    for _ in range(n):
        gate = (await store.read(key)).gate()
        wrote = gate != "skip_unread"
        read = reads and wrote_before and wrote
        await store.record(key, Outcome(wrote=wrote, read=read, gate=gate))  # a conversation reads and extends
        gates.append(gate)
        wrote_before = wrote
    return gates


async def test_a_family_whose_writes_are_never_read_stops_and_probes_with_backoff(kv: KVStore, tenant: str) -> None:
    store = OutcomeStore(kv)
    key = outcome_key(tenant, "anthropic", "claude-sonnet-4-5", "f1")
    n = 2 + 8 + 2 + 16 + 2 + 5
    gates = await simulate(store, key, n, reads=False)
    assert gates[:UNREAD_LIMIT] == ["write"] * UNREAD_LIMIT
    assert gates[2:10] == ["skip_unread"] * PROBE_START
    assert gates[10:12] == ["probe", "probe2"]
    assert gates[12:28] == ["skip_unread"] * (2 * PROBE_START)  # twice as long after an unread probe
    assert gates[28:30] == ["probe", "probe2"]
    written = sum(g != "skip_unread" for g in gates)
    assert written <= max_unread_writes(n)
    for m in (1, 11, 12, 30, 100, 1000):
        assert (await simulate(OutcomeStore(kv), outcome_key(tenant, "x", "y", f"w{m}"), m, reads=False)).count(
            "skip_unread") >= m - max_unread_writes(m)


async def test_a_read_resumes_writing(kv: KVStore, tenant: str) -> None:
    store = OutcomeStore(kv)
    key = outcome_key(tenant, "anthropic", "claude-sonnet-4-5", "f2")
    await simulate(store, key, 3, reads=False)
    assert (await store.read(key)).stopped
    await store.record(key, Outcome(wrote=False, read=True, gate="probe2", read_tokens=4000))
    ev = await store.read(key)
    assert not ev.stopped and ev.gate() == "write" and ev.probes == 0 and ev.skipped == 0


async def test_a_family_that_reads_its_writes_keeps_writing(kv: KVStore, tenant: str) -> None:
    store = OutcomeStore(kv)
    key = outcome_key(tenant, "anthropic", "claude-sonnet-4-5", "f3")
    gates = await simulate(store, key, 20, reads=True)
    assert set(gates) == {"write"}
    ev = await store.read(key)
    assert ev.observed_reuses("short") == pytest.approx(19 / 20)  # each write read back by the next request


def test_observed_reuses_need_evidence_per_ttl() -> None:
    ev = Evidence(writes=(MIN_EVIDENCE - 1, 0), reads=(5, 0))
    assert ev.observed_reuses("short") is None and ev.observed_reuses("long") is None
    ev = Evidence(writes=(4, 2), reads=(2, 6))
    assert ev.observed_reuses("short") == 0.5 and ev.observed_reuses("long") == 3.0


def test_the_probe_bound() -> None:
    assert [max_unread_writes(n) for n in (1, 2, 10, 11, 12, 30, 100)] == [1, 2, 2, 3, 4, 6, 8]
    assert probe_bound(11, 0.004) == pytest.approx(3 * 0.004)
    assert probe_bound(11, -1.0) == 0.0


async def test_a_dead_store_reads_as_no_evidence() -> None:
    from gateway.config import Settings
    from gateway.stores import open_store

    from .conftest import free_port_url

    dead = open_store(Settings(redis_url=free_port_url(), store_timeout=0.05))
    try:
        store = OutcomeStore(dead, timeout_s=0.05)
        ev = await store.read(outcome_key("t", "p", "m", "f"))
        assert ev == Evidence() and ev.gate() == "write"
        await store.record(outcome_key("t", "p", "m", "f"), Outcome(True, False))  # swallowed
    finally:
        await dead.close()
