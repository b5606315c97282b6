"""SIGTERM and policy reloads under load.

SIGTERM to `llm-cache-gateway serve` while streams are in flight: the requests already being
answered finish whole and right (drain), the process exits cleanly, and every answered request's
usage record is in Redis afterwards (flushed on the way out). A policy reload under load changes
the tenants without failing a request; a bad file is refused and the old policy kept.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
import time
from pathlib import Path

import aiohttp
import pytest
import yaml

from gateway_dev.bench.common import GatewayProcess
from gateway_dev.localrun import write_policies

from .conftest import ADMIN, KEYS, SIZES, TENANTS, Size, until
from .load import Load, lost_usage, lost_usage_in_redis, report, truth, upstream_calls

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("size", SIZES)
async def test_sigterm_under_load_drains_and_flushes_usage(size: Size, own_redis, emulators) -> None:
    gwp = GatewayProcess(emulators.vendor_url, TENANTS, redis_url=own_redis.url,
                         env={"GATEWAY_ADMIN_KEY": ADMIN, "GATEWAY_VLLM_ENDPOINTS": ""})
    await asyncio.to_thread(gwp.start)
    try:
        prompts = [f"sigterm {size.name} q{i}: how does graceful shutdown work?" for i in range(size.prompts * 3)]
        right = await truth(emulators.openai_base_url, prompts)
        # Streams of ~0.4 s (10 ms a token), so that many are mid-answer when the signal comes.
        load = Load(gwp.url, KEYS, prompts, repeats=1, concurrency=size.concurrency, stream=True,
                    latency="base=0.02,itl=0.01")
        task = asyncio.create_task(load.run())
        await until(lambda: load.progress >= size.concurrency, what="load before SIGTERM")
        assert gwp.proc is not None
        signalled = time.monotonic()
        gwp.proc.send_signal(signal.SIGTERM)
        await task
        code = await asyncio.to_thread(gwp.proc.wait, 60)
        # uvicorn re-raises the signal it caught once its graceful shutdown is done: -SIGTERM is a
        # clean exit too (a crash would be another code; a hang would time out above)
        assert code in (0, -signal.SIGTERM), (gwp.dir / "gateway.log").read_text()[-2000:]
    finally:
        await asyncio.to_thread(gwp.stop)
    ledger = load.ledger
    # Requests that reached the gateway before the signal all finished whole; after it, new
    # connections are refused (status 0), nothing half-answered.
    before = [o for o in ledger.outcomes if o.started < signalled - 0.05]
    in_flight = [o for o in before if o.ended > signalled]
    assert in_flight, "no request was in flight when SIGTERM came: the test proved nothing"
    assert [o for o in before if not o.complete] == []
    assert [o for o in ledger.outcomes if o.status not in (0, 200) or (o.status == 200 and not o.complete)] == []
    wrong = ledger.check_answers(right)
    assert wrong == 0, ledger.wrong_detail[:5]
    cross = ledger.cross_tenant(upstream_calls(emulators), KEYS)
    assert cross == []
    # Every answered request's usage record reached Redis before the process exited.
    lost = await lost_usage_in_redis(own_redis.url, ledger, KEYS)
    refused = sum(o.status == 0 and o.started >= signalled - 0.05 for o in ledger.outcomes)
    report(f"SIGTERM with {len(in_flight)} in flight ({size.name})", ledger, wrong, len(cross),
           sum(map(len, lost.values())), refused)
    assert lost == {}


def _replace_policies(folder: Path, tenants: dict) -> None:
    """Each file swapped in whole (as a config-map update does): the gateway also re-reads changed
    files on its own, and must never see a half-written folder."""
    staged = write_policies(Path(tempfile.mkdtemp(dir=folder.parent)), tenants)
    for path in staged.glob("*.yaml"):
        os.replace(path, folder / path.name)


@pytest.mark.parametrize("size", SIZES)
async def test_policy_reload_under_load(size: Size, emulators, gateway_factory) -> None:
    # the gateway's own check for changed files every 0.2 s races the admin reloads, as in production
    gw = gateway_factory(TENANTS, admin_key=ADMIN, policy_check_interval=0.2)
    folder = Path(gw.settings.policies)
    prompts = [f"reload {size.name} q{i}: what is a quota?" for i in range(size.prompts)]
    right = await truth(emulators.openai_base_url, prompts)
    load = Load(gw.url, KEYS, prompts, repeats=size.repeats * 2, concurrency=size.concurrency,
                latency="base=0.02", pace=0.02)
    task = asyncio.create_task(load.run())
    total = len(load.jobs())
    results = []
    async with aiohttp.ClientSession(headers={"authorization": f"Bearer {ADMIN}"}) as admin:
        for cycle in range(size.cycles):
            await until(lambda c=cycle: load.progress >= total * (c + 1) // (size.cycles + 2), what="load")
            # a good change: a new tenant, and t2's response cache TTL changed
            _replace_policies(folder, {**TENANTS, "t2": {**TENANTS["t2"], "response_cache": {"ttl": "10m"}},
                                       "t3": {"key": "key-reliability-t3"}})
            async with admin.post(f"{gw.url}/admin/policies/reload") as r:
                results.append((r.status, await r.json()))
            # a bad file: refused, the policy just loaded stays
            bad = folder.parent / "t1.yaml.new"
            bad.write_text(yaml.safe_dump({"tenant": "t1", "api_keys": "not-a-list",
                                           "response_cache": {"ttl": "forever"}}))
            os.replace(bad, folder / "t1.yaml")
            async with admin.post(f"{gw.url}/admin/policies/reload") as r:
                results.append((r.status, await r.json()))
    await task
    assert [status for status, _ in results] == [200, 422] * size.cycles, results
    ledger = load.ledger
    assert ledger.failed == [], ledger.summary()
    wrong = ledger.check_answers(right)
    assert wrong == 0, ledger.wrong_detail[:5]
    cross = ledger.cross_tenant(upstream_calls(emulators), KEYS)
    assert cross == []
    # The reloaded policy is the one in force: the new tenant works; the bad file changed nothing.
    after = Load(gw.url, {"t3": "key-reliability-t3", **KEYS}, prompts[:2], repeats=1, concurrency=1)
    await after.run()
    assert after.ledger.failed == [] and after.ledger.check_answers(right) == 0
    await asyncio.to_thread(gw.wait_idle)
    lost = await lost_usage(gw.url, ADMIN, ledger, KEYS)
    report(f"policy reloads x{size.cycles} good + bad ({size.name})", ledger, wrong, len(cross),
           sum(map(len, lost.values())))
    assert lost == {}
