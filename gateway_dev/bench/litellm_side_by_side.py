"""`llm-cache-gateway bench litellm`: this gateway and LiteLLM's proxy side by side, in one run, on the
same emulator, the same redis-server and the same client load.

    llm-cache-gateway bench litellm [--rounds 2] [--concurrency 32] [--hit-requests 2000]
        [--miss-requests 200] [--miss-concurrency 8] [--workers 1] [--quick] [--write docs/benchmarks.md]

Processes: a redis-server (the gateway's response cache in db 1, LiteLLM's Redis cache in db 0 under
its own namespace), the vendor emulator, the gateway (`llm-cache-gateway serve`, every layer but the
semantic cache, which LiteLLM's exact cache has no counterpart of), LiteLLM's proxy from
`.bench-venv/` (see `litellm_proxy.py`) and this load generator. Both proxies run all the time, each
with `--workers` processes (1 by default), so both are measured under the same CPU conditions; the
phases alternate A, B, A, B (`--rounds`) to cancel drift on a shared machine.

Per round: misses direct to the emulator (the baseline), then through each proxy (every prompt new:
added latency = proxy − direct, same round); then exact hits through each proxy at `--concurrency`
closed-loop clients over `--keys` stored prompts (p50, p99, hits/s, proxy CPU per hit). Every answer
is checked: a hit phase's answer must say it is a hit (`x-gateway-cache: response-hit`; LiteLLM's
`x-litellm-cache-key`, which it sends on cache hits only) and carry the emulator's answer for that
prompt. Targets: ≥ 3× LiteLLM's hit throughput, ≤ 1/3 of its added latency on a miss.
Then semantic quality on labelled pairs (`semantic_vs_litellm.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from gateway_dev.bench.asgi_servers import compare_servers, servers_lines
from gateway_dev.bench.common import GatewayProcess, LoadResult, append_section, closed_loop
from gateway_dev.bench.litellm_proxy import (
    MASTER_KEY,
    LiteLLMProcess,
    ensure_venv,
    tree_cpu_seconds,
    tree_rss_mib,
    write_config,
)
from gateway_dev.bench.litellm_report import embedder_lines, table, workers_lines
from gateway_dev.bench.semantic_vs_litellm import compare, markdown, vector_search_available
from gateway_dev.emulators.process import EmulatorProcess
from gateway_dev.redis_servers import RedisSingle

KEY = "bench-key"
MODEL = "gpt-4o-mini"
TITLE = "LiteLLM proxy side by side"
EVAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "eval"  # copied into the repository
DEFAULT_PAIRS = [EVAL / "semantic_pairs_dev.jsonl", EVAL / "qqp_pairs_sample.jsonl"]


@dataclass
class Side:
    name: str
    base: str  # OpenAI base URL (with /v1)
    key: str
    is_hit: Callable[[Any], bool] | None = None
    pid: int | None = None
    misses: list[LoadResult] = field(default_factory=list)
    hits: list[LoadResult] = field(default_factory=list)
    cpu_per_hit_ms: list[float] = field(default_factory=list)
    cpu_per_miss_ms: list[float] = field(default_factory=list)
    ready_s: float = float("nan")
    rss_ready_mib: float = float("nan")  # idle, just ready
    rss_end_mib: float = float("nan")  # after every phase
    not_hit: int = 0
    wrong: int = 0


def _body(text: str) -> bytes:
    # No max_tokens: an answer cut by it (finish_reason "length") is not cached by the gateway by default.
    return orjson.dumps({"model": MODEL, "messages": [{"role": "user", "content": text}]})


def _content(raw: bytes) -> str | None:
    try:
        return orjson.loads(raw)["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return None


def _sender(side: Side, texts: Callable[[int], str], expect_hit: bool, truth: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    headers = {"authorization": f"Bearer {side.key}", "content-type": "application/json"}
    url = f"{side.base}/chat/completions"

    async def send(session: aiohttp.ClientSession, i: int) -> tuple[int, float | None]:
        text = texts(i)
        async with session.post(url, data=_body(text), headers=headers) as resp:
            raw = await resp.read()
            if resp.status == 200 and expect_hit and side.is_hit is not None:
                side.not_hit += not side.is_hit(resp.headers)
                if truth is not None and _content(raw) != truth.get(text):
                    side.wrong += 1
            return resp.status, None

    return send


async def _truth(direct: Side, prompts: list[str]) -> dict[str, str]:
    """The emulator's own answer to each prompt (its answers are a function of the request)."""
    out: dict[str, str] = {}
    headers = {"authorization": f"Bearer {direct.key}", "content-type": "application/json"}
    async with aiohttp.ClientSession() as session:
        for text in prompts:
            async with session.post(f"{direct.base}/chat/completions", data=_body(text), headers=headers) as r:
                out[text] = _content(await r.read()) or ""
    return out


async def measure(args: argparse.Namespace, direct: Side, sides: list[Side]) -> None:
    tag = time.time_ns()
    prompts = [f"[{tag}] Question {i}: how do retry budgets interact with circuit breakers?" for i in range(args.keys)]
    truth = await _truth(direct, prompts)
    for side in [direct, *sides]:  # warm-up: connections, lazy imports, first-request paths
        await closed_loop(_sender(side, lambda i, s=side.name: f"[{tag}] warm {s} {i}", False),
                          concurrency=args.miss_concurrency, total=args.miss_concurrency * 3)
    for side in sides:  # store the hit set
        await closed_loop(_sender(side, lambda i: prompts[i], False), concurrency=min(8, args.keys), total=args.keys)
        await closed_loop(_sender(side, lambda i: prompts[i % len(prompts)], True, truth),
                          concurrency=args.concurrency, total=args.concurrency * 4)
        side.not_hit = side.wrong = 0  # priming and warm-up do not count
    for rnd in range(args.rounds):
        direct.misses.append(await closed_loop(
            _sender(direct, lambda i, r=rnd: f"[{tag}] direct r{r} miss {i}: what is a retry budget?", False),
            concurrency=args.miss_concurrency, total=args.miss_requests))
        for side in sides:
            c0 = tree_cpu_seconds(side.pid)
            side.misses.append(await closed_loop(
                _sender(side, lambda i, r=rnd, s=side.name: f"[{tag}] {s} r{r} miss {i}: what is a retry budget?",
                        False), concurrency=args.miss_concurrency, total=args.miss_requests))
            side.cpu_per_miss_ms.append((tree_cpu_seconds(side.pid) - c0) * 1000 / args.miss_requests)
        for side in sides:
            c0 = tree_cpu_seconds(side.pid)
            side.hits.append(await closed_loop(_sender(side, lambda i: prompts[i % len(prompts)], True, truth),
                                               concurrency=args.concurrency, total=args.hit_requests))
            side.cpu_per_hit_ms.append((tree_cpu_seconds(side.pid) - c0) * 1000 / args.hit_requests)
        print(f"  round {rnd + 1}/{args.rounds}: " + "; ".join(
            f"{s.name} miss p50 {s.misses[-1].pct(50) * 1000:.1f} ms, hits {s.hits[-1].rate:.0f}/s"
            for s in sides) + f"; direct miss p50 {direct.misses[-1].pct(50) * 1000:.1f} ms", flush=True)


async def embedder_run(args: argparse.Namespace, vendor_url: str, redis_url: str) -> dict[str, Any]:
    """A second gateway whose tenant enables the semantic layer: its ready time (the embedder loads before
    /readyz says ready) and RSS when ready and after semantic lookups and writes."""
    tenants = {"bench": {"key": KEY, "semantic_cache": {"enabled": True}}}
    with GatewayProcess(vendor_url, tenants, redis_url=redis_url.rsplit("/", 1)[0] + "/2") as gwp:
        pid = gwp.proc.pid if gwp.proc else None
        out: dict[str, Any] = {"ready_s": gwp.ready_s, "rss_ready_mib": tree_rss_mib(pid)}
        side = Side("gateway+semantic", f"{gwp.url}/v1", KEY, pid=pid)
        tag = time.time_ns()
        n = 40 if args.quick else 200
        await closed_loop(_sender(side, lambda i: f"[{tag}] How do I rotate API key number {i}?", False),
                          concurrency=8, total=n)
        c0 = tree_cpu_seconds(pid)
        looked = await closed_loop(_sender(side, lambda i: f"[{tag}] How can I rotate API key number {i}?", False),
                                   concurrency=8, total=n)
        out.update(rss_end_mib=tree_rss_mib(pid), cpu_ms_per_lookup=(tree_cpu_seconds(pid) - c0) * 1000 / n,
                   errors=looked.errors, requests=2 * n)
    return out


async def workers_run(args: argparse.Namespace, vendor_url: str, redis_url: str) -> dict[int, dict[str, float]]:
    """The gateway alone with 1, then 2 worker processes (same emulator, same Redis, default layers):
    hits/s and misses/s at the same client load, and CPU per request of the whole process tree."""
    out: dict[int, dict[str, float]] = {}
    tenants = {"bench": {"key": KEY, "semantic_cache": {"enabled": False}}}
    for n, db in ((1, 3), (2, 4)):
        with GatewayProcess(vendor_url, tenants, redis_url=redis_url.rsplit("/", 1)[0] + f"/{db}", workers=n) as gwp:
            side = Side(f"gateway x{n}", f"{gwp.url}/v1", KEY, lambda h: h.get("x-gateway-cache") == "response-hit",
                        gwp.proc.pid if gwp.proc else None)
            tag = time.time_ns()
            prompts = [f"[{tag}] Workers question {i}: what is a retry budget?" for i in range(args.keys)]
            def prompt(i: int, p: list[str] = prompts) -> str:
                return p[i % len(p)]

            await closed_loop(_sender(side, prompt, False), concurrency=8, total=args.keys)
            await closed_loop(_sender(side, prompt, True), concurrency=args.concurrency, total=args.concurrency * 4)
            side.not_hit = 0
            c0 = tree_cpu_seconds(side.pid)
            hits = await closed_loop(_sender(side, prompt, True), concurrency=args.concurrency,
                                     total=args.hit_requests)
            c1 = tree_cpu_seconds(side.pid)
            misses = await closed_loop(_sender(side, lambda i, t=tag: f"[{t}] workers miss {i}", False),
                                       concurrency=args.concurrency, total=args.miss_requests * 2)
            c2 = tree_cpu_seconds(side.pid)
            out[n] = {"hits_per_s": hits.rate, "misses_per_s": misses.rate,
                      "cpu_ms_per_hit": (c1 - c0) * 1000 / args.hit_requests,
                      "cpu_ms_per_miss": (c2 - c1) * 1000 / (args.miss_requests * 2),
                      "errors": hits.errors + misses.errors + side.not_hit, "ready_s": gwp.ready_s,
                      "rss_mib": tree_rss_mib(side.pid)}
    return out


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def pooled(results: list[LoadResult]) -> LoadResult:
    out = LoadResult()
    for r in results:
        out.latencies += r.latencies
        out.errors += r.errors
        out.elapsed += r.elapsed
    return out


def summarize(direct: Side, gw: Side, ll: Side) -> dict[str, Any]:
    def added(side: Side, p: float) -> float:  # mean over rounds of (proxy − direct, same round)
        return statistics.fmean(s.pct(p) - d.pct(p) for s, d in zip(side.misses, direct.misses, strict=True))

    base = pooled(direct.misses)
    out: dict[str, Any] = {"direct": {"miss_p50": base.pct(50), "miss_p99": base.pct(99)}}
    for side in (gw, ll):
        miss, hit = pooled(side.misses), pooled(side.hits)
        out[side.name] = {
            "miss_p50": miss.pct(50), "miss_p99": miss.pct(99),
            "added_p50": added(side, 50), "added_p99": added(side, 99),
            "hit_p50": hit.pct(50), "hit_p99": hit.pct(99), "hits_per_s": hit.rate,
            "hits_per_s_rounds": [r.rate for r in side.hits], "added_p50_rounds": [
                s.pct(50) - d.pct(50) for s, d in zip(side.misses, direct.misses, strict=True)],
            "cpu_ms_per_hit": _mean(side.cpu_per_hit_ms),
            "cpu_ms_per_miss": _mean(side.cpu_per_miss_ms), "ready_s": side.ready_s,
            "rss_ready_mib": side.rss_ready_mib, "rss_end_mib": side.rss_end_mib, "errors": miss.errors + hit.errors,
            "not_hit": side.not_hit, "wrong": side.wrong,
        }
    g, lt = out[gw.name], out[ll.name]
    out["ratios"] = {"hit_throughput": g["hits_per_s"] / lt["hits_per_s"],
                     "added_p50": g["added_p50"] / lt["added_p50"] if lt["added_p50"] > 0 else float("nan"),
                     "hit_p50": g["hit_p50"] / lt["hit_p50"]}
    out["targets"] = {"hit_throughput_3x": out["ratios"]["hit_throughput"] >= 3.0,
                      "added_latency_third": out["ratios"]["added_p50"] <= 1 / 3}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench litellm", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2, help="A,B rounds (each: misses, then hits, for both)")
    p.add_argument("--concurrency", type=int, default=32, help="closed-loop clients of the hit phases")
    p.add_argument("--hit-requests", type=int, default=2000)
    p.add_argument("--keys", type=int, default=100, help="distinct stored prompts the hit phases repeat")
    p.add_argument("--miss-requests", type=int, default=200)
    p.add_argument("--miss-concurrency", type=int, default=8)
    p.add_argument("--workers", type=int, default=1, help="processes of each proxy (gateway --workers, "
                   "LiteLLM --num_workers)")
    p.add_argument("--latency", default="base=0.05,prefill=0,cached=0,itl=0.0005", help="emulator latency model")
    p.add_argument("--pairs", default=",".join(str(x) for x in DEFAULT_PAIRS),
                   help="labelled pairs for the semantic comparison (comma-separated; '' to skip)")
    p.add_argument("--no-embedder", action="store_true", help="skip the run of a gateway with the semantic layer on")
    p.add_argument("--compare-workers", action="store_true", help="also run the gateway alone with 1 and 2 workers")
    p.add_argument("--compare-servers", action="store_true",
                   help="also run the gateway alone under uvicorn and under granian (asgi_servers.py)")
    p.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    p.add_argument("--json", type=Path, default=None, help="also write figures and raw latencies here")
    p.add_argument("--write", type=Path, default=None, help="replace this benchmark's section of a markdown file")
    args = p.parse_args(argv)
    if args.quick:
        args.hit_requests, args.miss_requests, args.keys = 300, 40, 30
        args.concurrency, args.miss_concurrency = min(args.concurrency, 16), min(args.miss_concurrency, 4)

    exe, how = ensure_venv()
    load_before = os.getloadavg()[0]
    with RedisSingle() as redis, EmulatorProcess(latency=args.latency) as emu:
        where = urlsplit(redis.url)
        config = write_config(Path(tempfile.mkdtemp(prefix="litellm-config-")), MODEL, f"{emu.vendor_url}/v1",
                              where.hostname or "127.0.0.1", where.port or 6379)
        tenants = {"bench": {"key": KEY, "semantic_cache": {"enabled": False}}}
        with GatewayProcess(emu.vendor_url, tenants, redis_url=redis.url.rsplit("/", 1)[0] + "/1",
                            workers=args.workers) as gwp, LiteLLMProcess(exe, config, args.workers) as llp:
            direct = Side("direct", f"{emu.vendor_url}/v1", "sk-bench")
            gw = Side("gateway", f"{gwp.url}/v1", KEY, lambda h: h.get("x-gateway-cache") == "response-hit",
                      gwp.proc.pid if gwp.proc else None)
            ll = Side("litellm", f"{llp.url}/v1", MASTER_KEY, lambda h: "x-litellm-cache-key" in h,
                      llp.proc.pid if llp.proc else None)
            for side, proc in ((gw, gwp), (ll, llp)):
                side.ready_s, side.rss_ready_mib = proc.ready_s, tree_rss_mib(side.pid)
            print(f"gateway {gwp.url} and LiteLLM {llp.url} ({how}), {args.workers} process(es) each; "
                  f"emulator {emu.vendor_url} latency `{args.latency}`", flush=True)
            asyncio.run(measure(args, direct, [gw, ll]))
            for side in (gw, ll):
                side.rss_end_mib = tree_rss_mib(side.pid)
        embedder = None if args.no_embedder else asyncio.run(embedder_run(args, emu.vendor_url, redis.url))
        workers = asyncio.run(workers_run(args, emu.vendor_url, redis.url)) if args.compare_workers else None
        servers = compare_servers(emu.vendor_url, redis.url, rounds=args.rounds, hits=args.hit_requests,
                                  misses=args.miss_requests, concurrency=args.concurrency) \
            if args.compare_servers else None
        why_not = vector_search_available(where.port or 6379)
    load_after = os.getloadavg()[0]
    s = summarize(direct, gw, ll)
    semantic = [compare(Path(x)) for x in args.pairs.split(",") if x and Path(x).exists()]

    command = "llm-cache-gateway bench litellm " + " ".join(argv or [])
    lines = [
        f"LiteLLM proxy 1.110.2 ({how}) vs this gateway, one process each unless `--workers`; same emulator "
        f"(latency `{args.latency}`), same redis-server, same load generator; {args.rounds} rounds A, B, A, B. "
        f"Misses: {args.miss_requests} per run at {args.miss_concurrency} clients; hits: {args.hit_requests} per run "
        f"at {args.concurrency} clients over {args.keys} stored prompts. {os.cpu_count()} CPUs shared with other "
        f"work (load average {load_before:.1f} before, {load_after:.1f} after): ratios from the same run are the "
        "figures to read.", "", *table(s, args), "",
        f"Targets: gateway hits/s ≥ 3× LiteLLM's ({s['ratios']['hit_throughput']:.2f}×: "
        f"{'met' if s['targets']['hit_throughput_3x'] else 'not met'}); added latency on a miss ≤ 1/3 of "
        f"LiteLLM's ({s['ratios']['added_p50']:.3f}: {'met' if s['targets']['added_latency_third'] else 'not met'}).",
        *embedder_lines(embedder), *workers_lines(workers, args), *servers_lines(servers),
        "", "### Semantic cache", "", why_not or "A vector-capable Redis is present.", "", *markdown(semantic),
        f"Command: `{command}`",
    ]
    print("\n".join(lines))
    if args.write:
        append_section(args.write, TITLE, "\n".join(lines))
    if args.json:
        raw = {"direct_miss": pooled(direct.misses).latencies, "gateway_miss": pooled(gw.misses).latencies,
               "litellm_miss": pooled(ll.misses).latencies, "gateway_hit": pooled(gw.hits).latencies,
               "litellm_hit": pooled(ll.hits).latencies}
        args.json.write_bytes(orjson.dumps({"summary": s, "latencies": raw, "semantic": semantic, "how": how,
                                            "embedder": embedder, "workers": workers, "servers": servers,
                                            "args": vars(args) | {"json": str(args.json), "write": str(args.write)}},
                                           option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
                                           default=str))
    ok = s["gateway"]["errors"] == 0 and s["gateway"]["wrong"] == 0 and (embedder is None or embedder["errors"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
