"""What usage recording adds per request: recording on vs off, in the same run.

    llm-cache-gateway bench usage [--requests 20000] [--redis-url URL] [--app]

Direct (always): the usage stage's `after()` — normalize, price, build the record, update the
Prometheus counters, append to the buffer — timed per call on finished requests of every protocol
(misses with provider-cache reads/writes, gateway hits, errors), against the same stage switched
off, interleaved in blocks so that machine noise hits both sides alike. The flush (serialize +
aggregate + write) runs in the background, off the request path; its cost per record is printed
separately (embedded store, and Redis with --redis-url).

--app: the whole gateway on loopback in front of the emulators, OpenAI chat requests one at a
time, recording switched on and off in alternating blocks; p50 latency of each side.

Target (issue 8): recording adds ≤ 0.2 ms p50 per request.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from gateway.accounting.pricing import PriceBook
from gateway.answer import Answer
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.protocols import get_adapter
from gateway.stores import open_store
from gateway.stores.memory import MemoryStore
from gateway.usage.stage import UsageStage

TARGET_MS = 0.2
_USAGE = {
    "openai_chat": ("openai", "gpt-4o", {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                                         "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                                         "completion_tokens_details": {"reasoning_tokens": 0}}),
    "anthropic_messages": ("anthropic", "claude-sonnet-4-5", {
        "input_tokens": 50, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 248,
        "cache_creation": {"ephemeral_5m_input_tokens": 148, "ephemeral_1h_input_tokens": 100}, "output_tokens": 503}),
    "gemini": ("gemini", "gemini-2.5-flash", {"promptTokenCount": 5210, "cachedContentTokenCount": 5000,
                                              "candidatesTokenCount": 40, "thoughtsTokenCount": 120,
                                              "totalTokenCount": 5370}),
    "openai_responses": ("openai", "gpt-5.6", {
        "input_tokens": 9000, "output_tokens": 50, "total_tokens": 9050,
        "output_tokens_details": {"reasoning_tokens": 0},
        "input_tokens_details": {"cached_tokens": 4000, "cache_write_tokens": 3000}}),
}


def contexts(n_tenants: int = 20) -> list[RequestContext]:
    """Finished requests as the request path leaves them: each protocol, misses, hits, an error."""
    out = []
    for i in range(200):
        protocol = list(_USAGE)[i % len(_USAGE)]
        provider, model, usage = _USAGE[protocol]
        ctx = RequestContext(request_id=f"gw-{i:06d}", adapter=get_adapter(protocol), headers={}, query={},
                             body={"model": model})
        ctx.tenant, ctx.provider, ctx.model = f"tenant-{i % n_tenants}", provider, model
        ctx.upstream_adapter, ctx.upstream_base_url = ctx.adapter, "http://upstream.test"
        ctx.template_id, ctx.template_version = f"tpl-{i % 7}", "1"
        ctx.stream = i % 2 == 0
        ctx.ttft_s, ctx.latency_s = 0.2, 1.1
        if i % 10 == 9:
            ctx.status, ctx.error = 502, "upstream status 502"
        else:
            ctx.answer = Answer(text="x", model=model, provider=provider, usage_raw=usage)
            ctx.answered_by = "upstream"
            if i % 5 == 1:
                ctx.answered_by, ctx.cache_status = "response-cache", "response-hit"
        out.append(ctx)
    return out


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def direct(requests: int, book: PriceBook, redis_url: str | None) -> dict[str, Any]:
    ctxs = contexts()
    on = UsageStage(Settings(), MemoryStore(), prices=book)
    off = UsageStage(Settings(), MemoryStore(), prices=book, enabled=False)
    for ctx in ctxs:  # warm-up: label children, price lookups, code paths
        await on.after(ctx)
    await on.recorder.flush()
    times: dict[str, list[float]] = {"on": [], "off": []}
    block = 100
    perf = time.perf_counter
    for start in range(0, requests, block):
        for name, stage in (("on", on), ("off", off)) if (start // block) % 2 == 0 else (("off", off), ("on", on)):
            bucket = times[name]
            for i in range(start, min(start + block, requests)):
                ctx = ctxs[i % len(ctxs)]
                t0 = perf()
                await stage.after(ctx)
                bucket.append(perf() - t0)
        if on.recorder.pending >= 2000:  # the background flush's job, outside the timed calls
            await on.recorder.flush()
    result: dict[str, Any] = {side: {"p50": _pct(v, 0.5), "p95": _pct(v, 0.95), "p99": _pct(v, 0.99),
                                     "mean": statistics.fmean(v)} for side, v in times.items()}
    result["added_p50_ms"] = (result["on"]["p50"] - result["off"]["p50"]) * 1000
    result["flush_per_record_us"] = {"memory": await _flush_cost(MemoryStore(), ctxs, book)}
    if redis_url:
        store = open_store(Settings(redis_url=redis_url, store_timeout=2.0))
        try:
            result["flush_per_record_us"]["redis"] = await _flush_cost(store, ctxs, book)
        finally:
            await store.close()
    return result


async def _flush_cost(store: Any, ctxs: list[RequestContext], book: PriceBook, n: int = 5000) -> float:
    stage = UsageStage(Settings(), store, prices=book)
    for i in range(n):
        stage.record(ctxs[i % len(ctxs)])
    t0 = time.perf_counter()
    assert await stage.recorder.flush(), "the store refused the flush"
    return (time.perf_counter() - t0) / n * 1e6


async def through_app(requests: int, book: PriceBook) -> dict[str, Any]:
    """The gateway on loopback, one request at a time, recording on and off in alternating blocks."""
    import tempfile
    from pathlib import Path

    import aiohttp

    from gateway_dev.emulators.harness import EmulatorSet
    from gateway_dev.localrun import LocalGateway

    holder: dict[str, UsageStage] = {}
    with EmulatorSet() as emu, tempfile.TemporaryDirectory() as d:
        gw = LocalGateway(emu, {"bench": {"key": "bench-key", "response_cache": {"enabled": False}}}, Path(d))
        stage = holder["stage"] = UsageStage(gw.settings, MemoryStore(), prices=book)
        gw._stages = [stage]  # the usage stage alone: the other layers are not what is measured
        with gw:
            times: dict[str, list[float]] = {"on": [], "off": []}
            headers = {"authorization": "Bearer bench-key"}
            async with aiohttp.ClientSession() as session:
                for i in range(requests + 200):
                    side = "on" if (i // 50) % 2 == 0 else "off"
                    stage.enabled = side == "on"
                    body = {"model": "gpt-4o-mini", "max_tokens": 16,
                            "messages": [{"role": "user", "content": f"question {i}"}]}
                    t0 = time.perf_counter()
                    async with session.post(f"{gw.url}/v1/chat/completions", json=body, headers=headers) as r:
                        await r.read()
                        assert r.status == 200, await r.text()
                    if i >= 200:  # warm-up done
                        times[side].append(time.perf_counter() - t0)
            gw.wait_idle()
    result = {side: {"p50": _pct(v, 0.5), "p95": _pct(v, 0.95)} for side, v in times.items()}
    result["added_p50_ms"] = (result["on"]["p50"] - result["off"]["p50"]) * 1000
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench usage", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=20_000)
    p.add_argument("--redis-url", default=None)
    p.add_argument("--app", action="store_true", help="also measure through the whole gateway")
    p.add_argument("--app-requests", type=int, default=2000)
    args = p.parse_args(argv)

    book = PriceBook(None)
    book.cost_map  # noqa: B018 - load litellm's map before timing anything
    d = asyncio.run(direct(args.requests, book, args.redis_url))
    ms = 1000.0
    print(f"usage stage after(), {args.requests} calls per side, interleaved blocks (ms)")
    print(f"  {'':14}{'p50':>9}{'p95':>9}{'p99':>9}{'mean':>9}")
    for side in ("off", "on"):
        r = d[side]
        print(f"  recording {side:<4}{r['p50'] * ms:9.4f}{r['p95'] * ms:9.4f}{r['p99'] * ms:9.4f}{r['mean'] * ms:9.4f}")
    verdict = "OK" if d["added_p50_ms"] <= TARGET_MS else "OVER TARGET"
    print(f"  added p50: {d['added_p50_ms']:.4f} ms (target ≤ {TARGET_MS} ms: {verdict}); "
          f"on/off p50 ratio {d['on']['p50'] / d['off']['p50']:.1f}×")
    for store, us in d["flush_per_record_us"].items():
        print(f"  background flush, {store} store: {us:.1f} µs per record (off the request path)")
    ok = d["added_p50_ms"] <= TARGET_MS
    if args.app:
        a = asyncio.run(through_app(args.app_requests, book))
        print(f"through the gateway, {args.app_requests} sequential OpenAI chat requests (ms)")
        for side in ("off", "on"):
            print(f"  recording {side:<4} p50 {a[side]['p50'] * ms:8.3f}  p95 {a[side]['p95'] * ms:8.3f}")
        print(f"  added p50: {a['added_p50_ms']:.4f} ms; on/off p50 ratio {a['on']['p50'] / a['off']['p50']:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
