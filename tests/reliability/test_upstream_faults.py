"""Upstream faults and client disconnects under load.

Faults ride on the request (`x-emulator-fault`, forwarded upstream like any `x-` header): 5xx, 429,
a hang past the gateway's read timeout, a slow first byte, a stream cut after N events, an in-stream
error. The upstream's failure must pass through in the caller's error shape; nothing else may fail;
no error or partial stream may be stored (the same request afterwards is a miss with the whole,
right answer, then a hit); every answered request has its usage record.
"""

from __future__ import annotations

import asyncio

import aiohttp
import orjson
import pytest

from .conftest import ADMIN, KEYS, SIZES, TENANTS, Size
from .load import Ledger, Load, Outcome, body, lost_usage, report, truth, upstream_calls

pytestmark = pytest.mark.timeout(240)

READ_TIMEOUT = 1.5  # the gateway's read timeout in these tests: a hung upstream answers 504 after it
# (fault, stream) → what the caller must see
FAULTS: list[tuple[str, bool, int | None]] = [
    ("status=503", False, 503), ("status=429", False, 429), ("status=503", True, 503), ("status=500", False, 500),
    ("timeout", False, 504), ("slow_first_byte=0.3", False, 200), ("cut_stream_after=3", True, 200),
    ("stream_error_after=2", True, 200), ("status=429,retry_after=2", True, 429),
]


@pytest.mark.parametrize("size", SIZES)
async def test_upstream_faults_pass_through_and_are_never_cached(size: Size, emulators, gateway_factory) -> None:
    gw = gateway_factory(TENANTS, admin_key=ADMIN, read_timeout=READ_TIMEOUT)
    # One prompt per job: a faulted request never shares a single-flight with a clean one.
    n = len(FAULTS) * max(2, size.repeats // 2)
    prompts = [f"faults {size.name} q{i}: what limits apply to batch jobs?" for i in range(n)]
    right = await truth(emulators.openai_base_url, prompts)
    spec = {i: FAULTS[(i // len(KEYS)) % len(FAULTS)] for i in range(n * len(KEYS))}
    load = Load(gw.url, KEYS, prompts, repeats=1, concurrency=size.concurrency,
                fault=lambda i: spec[i][0], stream=lambda i: spec[i][1])
    await load.run()
    ledger = load.ledger
    assert ledger.sent == n * len(KEYS)
    by_prompt = {(o.tenant, o.prompt): o for o in ledger.outcomes}
    for j, (tenant, prompt) in enumerate(load.jobs()):
        fault, stream, status = spec[j]
        o = by_prompt[(tenant, prompt)]
        assert o.status == status, (fault, stream, o.status, o.cache)
        if fault.startswith(("cut_stream", "stream_error")):
            assert not o.complete, (fault, o.text)  # the client sees the stream fail, not a clean end
        elif status == 200:
            assert o.complete and o.text == right[prompt], (fault, o.text)
    assert ledger.failed_unexpected == []
    wrong = ledger.check_answers(right)
    assert wrong == 0, ledger.wrong_detail[:5]
    cross = ledger.cross_tenant(upstream_calls(emulators), KEYS)
    assert cross == []

    # Nothing failed was stored: the same requests, now without faults, are misses with the right
    # answer (a stored error or partial stream would come back as a hit), then hits.
    await asyncio.to_thread(gw.wait_idle)
    failed = sorted({o.prompt for o in ledger.failed})
    again = Load(gw.url, KEYS, failed, repeats=2, concurrency=1)
    await again.run()
    assert [o.cache for o in again.ledger.outcomes] == ["miss"] * len(failed) * len(KEYS) + \
        ["response-hit"] * len(failed) * len(KEYS)
    wrong_again = again.ledger.check_answers(right)
    assert wrong_again == 0, again.ledger.wrong_detail[:5]
    await asyncio.to_thread(gw.wait_idle)
    lost = await lost_usage(gw.url, ADMIN, ledger, KEYS)
    report(f"upstream faults ({size.name})", ledger, wrong + wrong_again, len(cross), sum(map(len, lost.values())))
    assert lost == {}


async def test_upstream_errors_keep_the_vendor_error_shape(emulators, gateway_factory) -> None:
    gw = gateway_factory(TENANTS, read_timeout=READ_TIMEOUT)
    async with aiohttp.ClientSession() as session:
        for fault, status in (("status=503", 503), ("status=429,retry_after=2", 429), ("timeout", 504)):
            async with session.post(f"{gw.url}/v1/chat/completions", data=orjson.dumps(body(f"shape {fault}")),
                                    headers={"authorization": f"Bearer {KEYS['t1']}",
                                             "x-emulator-fault": fault}) as resp:
                data = await resp.json()
                assert resp.status == status
                assert isinstance(data["error"]["message"], str) and data["error"]["message"]
                assert resp.headers["x-gateway-request-id"]
                if status == 429:
                    assert resp.headers.get("retry-after") == "2"


@pytest.mark.parametrize("size", SIZES)
async def test_client_disconnects_mid_stream(size: Size, emulators, gateway_factory) -> None:
    gw = gateway_factory(TENANTS, admin_key=ADMIN)
    prompts = [f"disconnect {size.name} q{i}: explain connection draining" for i in range(size.prompts)]
    right = await truth(emulators.openai_base_url, prompts)
    request_ids: dict[str, set[str]] = {t: set() for t in KEYS}

    async def hang_up(tenant: str, prompt: str) -> None:
        # a slow stream (20 ms a token): read the first piece, then drop the connection
        async with aiohttp.ClientSession() as session:
            resp = await session.post(f"{gw.url}/v1/chat/completions", data=orjson.dumps(body(prompt, True)),
                                      headers={"authorization": f"Bearer {KEYS[tenant]}",
                                               "x-emulator-latency": "itl=0.02"})
            assert resp.status == 200
            request_ids[tenant].add(resp.headers["x-gateway-request-id"])
            await resp.content.readany()
            resp.connection.transport.abort()  # type: ignore[union-attr]
            resp.close()

    await asyncio.gather(*(hang_up(t, p) for p in prompts for t in KEYS))
    # The gateway keeps serving, and what a cut stream had was never stored as an answer: the same
    # requests now get the whole, right answer (from upstream, or from a complete answer only).
    load = Load(gw.url, KEYS, prompts, repeats=2, concurrency=size.concurrency, stream=lambda i: i % 2 == 0)
    await load.run()
    assert load.ledger.failed == []
    wrong = load.ledger.check_answers(right)
    assert wrong == 0, load.ledger.wrong_detail[:5]
    cross = load.ledger.cross_tenant(upstream_calls(emulators), KEYS)
    assert cross == []
    await asyncio.to_thread(gw.wait_idle)
    for tenant, ids in request_ids.items():  # the cut requests are accounted for too
        lost = await lost_usage(gw.url, ADMIN, _ids_ledger(tenant, ids), [tenant])
        assert lost == {}, lost
    lost = await lost_usage(gw.url, ADMIN, load.ledger, KEYS)
    report(f"{sum(map(len, request_ids.values()))} client disconnects, then ({size.name})", load.ledger, wrong,
           len(cross), sum(map(len, lost.values())))
    assert lost == {}


def _ids_ledger(tenant: str, ids: set[str]) -> Ledger:
    return Ledger([Outcome(tenant, "", 200, None, rid, None, False, None, False, 0.0, 0.0) for rid in ids])
