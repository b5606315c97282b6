"""`llm-cache-gateway bench routing`: cache-aware routing against round robin, least loaded and consistent
hashing, on emulated vLLM replicas with limited KV and a realistic prefill cost.

    llm-cache-gateway bench routing [--workloads a,b,c] [--policies cache_aware,round_robin,...]
                                    [--via process|gateway|router] [--scale 1.0] [--concurrency 24]
                                    [--against sglang-router,vllm-router] [--failover]
                                    [--kv-blocks 3072] [--max-num-seqs 8] [--json out.json]

Emulator subprocesses (`python -m gateway_dev.emulators`) serve four vLLM replicas (vLLM's block prefix cache with
LRU eviction, `max_num_seqs` and a waiting queue; KV capacity `--kv-blocks` blocks of 16 tokens; the
`realistic` latency preset of an 8B model on an H100: 30 ms + 250 µs per uncached prompt token + 10 µs per
cached one, 12 ms per output token) and one replica with unlimited KV for the upper bound. Each policy runs
through the whole gateway as its own `llm-cache-gateway serve` process (`--via process`, the default, as the
peer routers run), the gateway in a thread of this process (`--via gateway`: the clients then share its
interpreter), or with the `Router` driven directly (`--via router`). Clients stream;
TTFT runs from sending (before the routing decision) to the first content token. The replicas' caches and
counters are reset between runs. Hit rates and per-replica request counts come from the replicas' own
`/metrics` (`vllm:prefix_cache_*`, `vllm:request_success_total`).

Workloads: (a) multi-turn agent sessions (5–30 turns, a shared agent prompt, tool results appended each turn);
(b) SGLang's generated-shared-prefix (groups × prompts, a long system prompt, a short question, shuffled);
(c) agent sessions mixed with 20% one-off requests; (d) multi-tenant agents (a long system prompt per tenant).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from gateway_dev.bench.routing_peers import PINS, PeerTarget, ensure_venv
from gateway_dev.bench.routing_report import report
from gateway_dev.bench.routing_targets import (
    _CLIENT_ERRORS,
    DirectTarget,
    GatewayProcess,
    GatewayTarget,
    Replicas,
    _send,
    default_layers,
)
from gateway_dev.bench.routing_workloads import Workload, make_workloads

MODEL = "Qwen/Qwen3-8B"
POLICIES = ("cache_aware", "round_robin", "least_loaded", "consistent_hash")
EVENTS = "cache_aware+events"  # cache_aware scoring replicas by their KV events (the replicas publish them)
BOUND = "bound"


# ---- one run --------------------------------------------------------------------------------------------
@dataclass
class Result:
    policy: str
    hit_rate: float
    ttft: list[float]
    wall: float
    requests: int
    per_replica: Counter[str]
    errors: Counter[str]  # failed requests by HTTP status or client exception
    reasons: Counter[str]
    cpu: float | None = None  # CPU seconds the router's processes used during the run (None: not measurable)
    partial: bool = False  # stopped at --budget before the workload was through

    @property
    def cpu_ms(self) -> float | None:
        """The router's CPU per answered request, in ms."""
        return self.cpu / self.requests * 1000 if self.cpu is not None and self.requests else None

    @property
    def mean(self) -> float:
        return statistics.mean(self.ttft) if self.ttft else float("nan")

    def q(self, p: float) -> float:
        s = sorted(self.ttft)
        return s[min(len(s) - 1, int(p * len(s)))] if s else float("nan")

    @property
    def imbalance(self) -> float:
        counts = list(self.per_replica.values())
        return max(counts) / statistics.mean(counts) if counts and statistics.mean(counts) else float("nan")


def _decisions() -> Counter[str]:
    from gateway.metrics import ROUTE_DECISIONS

    out: Counter[str] = Counter()
    for metric in ROUTE_DECISIONS.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                out[sample.labels["reason"]] += int(sample.value)
    return out


async def _replica_counts(http: aiohttp.ClientSession, urls: list[str]) -> tuple[float, float, Counter[str]]:
    """(prefix hits, prefix queries, requests per replica) from the replicas' own /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    from gateway.routing.scrape import parse_metrics

    hits = queries = 0.0
    served: Counter[str] = Counter()
    for url in urls:
        async with http.get(url + "/metrics") as resp:
            text = await resp.text()
        stats = parse_metrics(text)
        hits, queries = hits + (stats.hits or 0), queries + (stats.queries or 0)
        lines = "\n".join(line for line in text.splitlines() if line.startswith("vllm:request_success_total"))
        served[url] = int(sum(s.value for f in text_string_to_metric_families(lines + "\n") for s in f.samples))
    return hits, queries, served


def _cpu_seconds(leader: int) -> float | None:
    """CPU seconds (user + system) used so far by every process of the session `leader` leads (the router
    and any child it started), from /proc; None where /proc is not there."""
    import os

    total, tick, found = 0.0, os.sysconf("SC_CLK_TCK"), False
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[3]) == leader:  # field 6, the session id (the router runs in a session of its own)
            total += (int(fields[11]) + int(fields[12])) / tick
            found = True
    return total if found else None


async def run_one(http: aiohttp.ClientSession, urls: list[str], policy: str, wl: Workload,
                  concurrency: int, params: dict[str, Any], via: str, folder: Path,
                  budget: float | None = None, rate: float | None = None) -> Result:
    from gateway.config import RoutingConfig

    routing = RoutingConfig(policy=policy if policy in POLICIES else "cache_aware" if policy == EVENTS
                            else "round_robin", health_interval=1.0,
                            metrics_interval=0.5, params=params)
    target: DirectTarget | GatewayTarget | GatewayProcess | PeerTarget
    if policy in PINS:
        target = PeerTarget(http, policy, urls)
    elif via == "process":
        target = GatewayProcess(http, urls, routing, folder / policy)
    elif via == "gateway":
        target = GatewayTarget(http, urls, routing, folder / policy)
    else:
        target = DirectTarget(http, urls, routing)

    async def decisions() -> Counter[str]:
        return await target.decisions() if isinstance(target, GatewayProcess) else _decisions()

    async def reset() -> None:
        for url in urls:  # empty caches and zeroed counters: every policy starts cold
            async with http.post(url + "/_emulator/reset", json={"cache": True}) as resp:
                resp.raise_for_status()

    # Reset first (emptying the bound replica's huge KV takes its event loop a moment, which our pool's health
    # checks would see), then start. Every router's readiness probe is a request (~24 uncached tokens): the
    # replicas' counters are read after it and only what the workload adds counts, for ours and the peers
    # alike (a reset after our gateway's start made it see the bound replica fail its health checks).
    await reset()
    await target.start()
    if policy == EVENTS:  # the router's SUB sockets connect before the first batch (seq 0 after the reset)
        await asyncio.sleep(1.0)
    decided = await decisions()
    base_hits, base_queries, base_served = await _replica_counts(http, urls)
    proc = getattr(target, "proc", None) or getattr(getattr(target, "peer", None), "proc", None)
    leader = proc.pid if proc is not None else None
    cpu0 = _cpu_seconds(leader) if leader is not None else None
    queue = list(reversed(wl.sessions))
    one_offs = list(reversed(wl.one_offs))
    side: list[asyncio.Task[str | None]] = []
    ttfts: list[float] = []
    errors: Counter[str] = Counter()
    _CLIENT_ERRORS.clear()
    done = 0

    async def send(messages: list[dict[str, str]]) -> str | None:
        body = {"model": MODEL, "messages": messages, "stream": True, "max_tokens": wl.output_tokens}
        t0 = time.perf_counter()  # before the routing decision: its cost is part of TTFT
        status, text, first = await target.call(body, wl.output_tokens)
        if status != 200:
            errors[str(status)] += 1
            return None
        ttfts.append(first - t0)
        return text

    stop_at = time.perf_counter() + budget if budget else float("inf")
    partial = False

    async def run_session(session: Any) -> None:
        nonlocal done, partial
        messages = list(session.messages)
        for turn in range(1 + len(session.followups)):
            if turn and time.perf_counter() > stop_at:  # --budget: no further turn either
                partial = True
                break
            text = await send(messages)
            done += 1
            if one_offs and done % wl.one_off_every == 0:
                side.append(asyncio.create_task(send(one_offs.pop().messages)))
            if text is None:
                break
            if turn < len(session.followups):
                messages = [*messages, {"role": "assistant", "content": text},
                            {"role": "user", "content": session.followups[turn]}]

    async def worker() -> None:
        nonlocal partial
        while queue:
            if time.perf_counter() > stop_at:  # --budget: no new session
                partial = True
                break
            await run_session(queue.pop())

    async def paced() -> None:
        """--rate: sessions start at a fixed rate whatever the router's latency (an open loop), so that every
        router is offered the same load; a closed loop offers more to the router that answers sooner."""
        nonlocal partial
        started: list[asyncio.Task[None]] = []
        while queue:
            if time.perf_counter() > stop_at:
                partial = True
                break
            started.append(asyncio.create_task(run_session(queue.pop())))
            await asyncio.sleep(max(0.0, start + len(started) / rate - time.perf_counter()))  # type: ignore[operator]
        await asyncio.gather(*started)

    start = time.perf_counter()
    try:
        await (paced() if rate else asyncio.gather(*(worker() for _ in range(concurrency))))
        while one_offs and not partial:  # whatever the sessions did not pace out
            side.append(asyncio.create_task(send(one_offs.pop().messages)))
        await asyncio.gather(*side)
        wall = time.perf_counter() - start
        reasons = await decisions() - decided
        cpu1 = _cpu_seconds(leader) if leader is not None else None
    finally:  # interrupted too: a peer router's (or our gateway's) process must not outlive the run
        await target.stop()
    if errors.pop("599", 0):
        errors.update(_CLIENT_ERRORS)
    hits, queries, served = await _replica_counts(http, urls)
    hits, queries = hits - base_hits, queries - base_queries
    served = Counter({url: served[url] - base_served[url] for url in urls})  # a replica that served none counts
    cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    return Result(policy, hits / queries if queries else 0.0, ttfts, wall, len(ttfts), served, errors, reasons,
                  cpu, partial)


async def warm_up(http: aiohttp.ClientSession, urls: list[str], n: int = 16) -> None:
    """A few requests on every replica before the first measured run: whichever policy ran first would
    otherwise pay the emulator processes' first-use costs (run order is not a policy's merit)."""
    body = {"model": MODEL, "stream": True, "max_tokens": 4,
            "messages": [{"role": "user", "content": "warm up " * 200}]}
    await asyncio.gather(*(_send(http, url + "/v1", body, 4) for url in urls for _ in range(n)))


async def bench(args: argparse.Namespace, figures: dict[str, Any]) -> int:
    peers = [p for p in args.against.split(",") if p]
    if peers:
        await asyncio.to_thread(ensure_venv, peers)
    policies = [p for p in args.policies.split(",") if p]
    policies = [policies[0], *peers, *policies[1:]] if policies else peers  # ours, the peers, the baselines
    workloads = make_workloads(args.scale, args.seed)
    chosen = [workloads[w] for w in args.workloads.split(",") if w]
    replicas = Replicas(args.replicas, args.kv_blocks, args.max_num_seqs, args.latency, args.shared_prefill)
    out: dict[str, Any] = {}
    all_checks: dict[str, bool] = {}
    await asyncio.to_thread(replicas.start)
    # Below uvicorn's 5 s keep-alive: never reuse a connection the gateway is closing (a client-side race).
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=3)
    scratch = tempfile.TemporaryDirectory(prefix="bench-routing-")
    folder = Path(scratch.name)
    try:
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as http:
            how = {"process": "ours as its own `llm-cache-gateway serve` process, like each peer router",
                   "gateway": "through the gateway (route stage wired as in the app, in a thread of this process)",
                   "router": "driving the router directly (real pool and policies, HTTP to the replicas)"}[args.via]
            print(f"{args.replicas} emulated vLLM replicas, {args.kv_blocks} KV blocks x 16 tokens each, "
                  f"max_num_seqs {args.max_num_seqs}, latency '{args.latency}'; "
                  + (f"sessions started at {args.rate:g}/s (open loop)" if args.rate
                     else f"{args.concurrency} concurrent clients") + f"; {how}", flush=True)
            if args.via != "router" and any(p not in PINS for p in policies):
                print(f"ours with its tenant's default layers on the path: {default_layers()}; the peers route "
                      "only\n", flush=True)
            else:
                print(flush=True)
            await warm_up(http, [*replicas.urls, replicas.bound_url])
            for wl in chosen:
                results: dict[str, Result] = {}
                for policy in [*policies, *([BOUND] if args.bound else [])]:
                    urls = [replicas.bound_url] if policy == BOUND else replicas.urls
                    params = orjson.loads(args.params)
                    if policy == EVENTS:
                        params["kv_events_endpoints"] = dict(zip((u[7:] for u in urls), replicas.events, strict=True))
                    results[policy] = await run_one(http, urls, policy, wl, args.concurrency, params,
                                                    args.via, folder, args.budget, args.rate)
                lines, checks = report(wl, results, args.concurrency)
                print("\n".join(lines) + "\n", flush=True)
                all_checks.update(checks)
                out[wl.name] = {p: {"hit_rate": r.hit_rate, "ttft_p50": r.q(0.5), "ttft_p99": r.q(0.99),
                                    "ttft_mean": r.mean, "ttft_p90": r.q(0.9),
                                    "throughput_rps": r.requests / r.wall, "imbalance": r.imbalance,
                                    "per_replica": dict(r.per_replica), "reasons": dict(r.reasons),
                                    "errors": dict(r.errors), "cpu_ms_per_request": r.cpu_ms,
                                    "partial": r.partial}
                                for p, r in results.items()}
            if args.failover:
                from gateway_dev.bench import routing_failover

                await asyncio.to_thread(replicas.stop)  # the failover runs start replicas of their own
                wl = make_workloads(args.scale * 0.5, args.seed + 1)["a"]
                failover = {name: await routing_failover.failover_one(
                    http, name, wl, args.concurrency, orjson.loads(args.params), folder, args.latency)
                    for name in ["cache_aware", *peers]}
                print("\n".join(routing_failover.report(failover)) + "\n", flush=True)
                out["failover"] = failover
                all_checks["failover: 0 failed requests on replica loss"] = failover["cache_aware"]["failed"] == 0
    finally:
        await asyncio.to_thread(replicas.stop)
        scratch.cleanup()
    errors = sum(sum(r["errors"].values()) for name, wl in out.items() if name != "failover" for r in wl.values())
    if not args.targets:
        # A smoke-sized run is too short for its targets to mean anything: it reports, claims nothing.
        print("  targets not checked (--no-targets: a smoke run; the full-size run checks them)")
        all_checks = {}
    for name, ok in all_checks.items():
        print(f"  [{'PASS' if ok else 'FAIL'}] cache_aware {name}")
    if errors:
        print(f"  [FAIL] {errors} failed requests")
    figures.update(results=out, checks=all_checks, targets_checked=args.targets)
    return 0 if all(all_checks.values()) and not errors else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench routing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="a,b,c")
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--against", default="", help="peer routers run in the same job: sglang-router,vllm-router "
                   "(installed at pinned versions into .bench-venv-routers/)")
    p.add_argument("--failover", action="store_true",
                   help="also kill one of 3 replicas mid-run under ours and each peer; count failed requests")
    p.add_argument("--no-shared-prefill", dest="shared_prefill", action="store_false",
                   help="replicas prefill concurrent requests as if each were alone (no load cost beyond queueing)")
    p.add_argument("--scale", type=float, default=1.0, help="multiplies the number of sessions/groups")
    p.add_argument("--concurrency", type=int, default=24)
    p.add_argument("--rate", type=float, default=None, metavar="SESSIONS_PER_S",
                   help="open loop: start sessions at this rate instead of --concurrency clients back to back, so "
                   "every router is offered the same load")
    p.add_argument("--replicas", type=int, default=4)
    p.add_argument("--kv-blocks", type=int, default=4096, help="KV capacity of each replica, 16-token blocks")
    p.add_argument("--max-num-seqs", type=int, default=8)
    p.add_argument("--latency", default="realistic", help="emulator latency preset or spec")
    p.add_argument("--via", choices=("process", "gateway", "router"), default="process",
                   help="ours as its own serve process (default, as the peers run), the gateway in a thread of "
                   "the benchmark, or the router driven directly")
    p.add_argument("--params", default="{}", help="routing.params as JSON, for tuning")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="per router and workload: after this many seconds send no new request (those in flight "
                   "finish); such a run is reported as partial and checks no target. With --policies '' and one "
                   "--against peer, full-scale side-by-sides can be run one router x one workload at a time")
    p.add_argument("--no-bound", dest="bound", action="store_false",
                   help="skip the unlimited-KV bound run (when running the side-by-side in pieces)")
    p.add_argument("--json", default=None, help="also write the figures to this file")
    p.add_argument("--no-targets", dest="targets", action="store_false",
                   help="report the figures without checking the targets (smoke runs at small --scale)")
    args = p.parse_args(argv)
    figures: dict[str, Any] = {}
    code = asyncio.run(bench(args, figures))
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))
    return code


if __name__ == "__main__":
    sys.exit(main())
