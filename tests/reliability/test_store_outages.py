"""Store outages under load: redis-server killed and restarted, the semantic store unreachable.

The gateway must degrade to a plain proxy (every request answered, right), never serve one tenant
another's answer, and lose no usage record (the recorder keeps what Redis did not accept).
"""

from __future__ import annotations

import asyncio

import pytest

from gateway_dev.localrun import free_port

from .conftest import ADMIN, KEYS, SIZES, TENANTS, Size, until
from .load import Load, lost_usage, report, truth, upstream_calls

pytestmark = pytest.mark.timeout(240)


async def until_hit(url: str, key: str, prompt: str, expected: str, within: float = 20.0) -> None:
    again = Load(url, {"t": key}, [prompt], repeats=1, concurrency=1)
    deadline = asyncio.get_running_loop().time() + within
    while True:
        await again.run()
        last = again.ledger.outcomes[-1]
        if last.cache == "response-hit":
            assert last.text == expected
            return
        assert asyncio.get_running_loop().time() < deadline, "the response cache never served again"
        await asyncio.sleep(0.3)


def _assert_clean(load: Load, right: dict[str, str], emulators,  # type: ignore[no-untyped-def]
                  expect_failures: int = 0) -> tuple[int, int]:
    ledger = load.ledger
    summary = ledger.summary()
    assert ledger.sent == len(load.jobs()), summary
    assert len(ledger.failed_unexpected) == expect_failures, [
        (o.tenant, o.prompt, o.status, o.cache) for o in ledger.failed_unexpected][:10]
    wrong = ledger.check_answers(right)
    assert wrong == 0, ledger.wrong_detail[:5]
    cross = ledger.cross_tenant(upstream_calls(emulators), KEYS)
    assert cross == []
    return wrong, len(cross)


@pytest.mark.parametrize("size", SIZES)
async def test_redis_killed_and_restarted_under_load(size: Size, durable_redis, emulators, gateway_factory) -> None:
    gw = gateway_factory(TENANTS, redis_url=durable_redis.url, admin_key=ADMIN)
    prompts = [f"redis outage {size.name} q{i}: how do retry budgets work?" for i in range(size.prompts)]
    right = await truth(emulators.openai_base_url, prompts)
    load = Load(gw.url, KEYS, prompts, repeats=size.repeats, concurrency=size.concurrency,
                latency="base=0.02", pace=0.05)
    total = len(load.jobs())
    task = asyncio.create_task(load.run())
    for cycle in range(size.cycles):
        start = total * (2 * cycle + 1) // (2 * size.cycles + 1)
        await until(lambda s=start: load.progress >= s, what="load to reach the outage")
        await asyncio.to_thread(durable_redis.stop)  # SIGKILL, by pid
        down = load.progress
        await until(lambda d=down: load.progress >= d + max(8, total // (4 * size.cycles + 4)), what="load while down")
        await asyncio.to_thread(durable_redis.start)  # same port, same append-only file
    await task
    wrong, cross = _assert_clean(load, right, emulators)
    # Once Redis is back (and the breaker has closed after its cool-down) the cache serves again.
    await until_hit(gw.url, KEYS["t1"], prompts[0], right[prompts[0]])
    await asyncio.to_thread(gw.wait_idle)
    lost = await lost_usage(gw.url, ADMIN, load.ledger, KEYS, wait=20)
    report(f"redis killed x{size.cycles} ({size.name})", load.ledger, wrong, cross, sum(map(len, lost.values())))
    assert lost == {}, {t: len(ids) for t, ids in lost.items()}


@pytest.mark.parametrize("size", SIZES)
async def test_semantic_store_unreachable_degrades_to_proxy(size: Size, emulators, gateway_factory) -> None:
    closed = free_port()  # nothing listens here: every Qdrant call is refused
    tenants = {name: {**spec, "semantic_cache": {"enabled": True}} for name, spec in TENANTS.items()}
    gw = gateway_factory(tenants, qdrant_url=f"http://127.0.0.1:{closed}", admin_key=ADMIN)
    prompts = [f"qdrant outage {size.name} q{i}: how should I rotate an API key?" for i in range(size.prompts)]
    right = await truth(emulators.openai_base_url, prompts)
    load = Load(gw.url, KEYS, prompts, repeats=size.repeats, concurrency=size.concurrency)
    await load.run()
    wrong, cross = _assert_clean(load, right, emulators)
    assert not any(o.cache == "semantic-hit" for o in load.ledger.outcomes)
    assert any(o.cache == "response-hit" for o in load.ledger.outcomes)  # the exact cache is unaffected
    await asyncio.to_thread(gw.wait_idle)
    lost = await lost_usage(gw.url, ADMIN, load.ledger, KEYS)
    report(f"semantic store unreachable ({size.name})", load.ledger, wrong, cross, sum(map(len, lost.values())))
    assert lost == {}
