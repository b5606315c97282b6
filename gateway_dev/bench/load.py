"""`llm-cache-gateway bench load`: two gateway processes on one Redis, driven per path.

    llm-cache-gateway bench load [--concurrency 32] [--requests 1500] [--trace 150] [--qdrant 1000,5000]
        [--redis single|cluster] [--paths hit,hit-stream,semantic-hit,miss,miss-stream] [--latency base=0.02,itl=0.0005]
        [--write docs/benchmarks.md]

Processes, each its own: a `redis-server` on loopback (`--redis cluster`: a 3-primary Redis
Cluster), the vendor emulators, two gateways (`llm-cache-gateway serve`, every layer) and this load
generator (aiohttp, closed loop: each of
`--concurrency` clients sends its next request when its previous one is answered, alternating
between the two gateways). Paths, one phase each, OpenAI Chat Completions:
- `hit`: repeats of stored requests (response-cache hits), `hit-stream` the same streamed;
- `semantic-hit`: reworded questions (case, punctuation, a greeting) of stored ones, for a tenant
  whose exact cache is off: each request embeds its question and searches the vector store. The
  vector store is each gateway's embedded Qdrant engine (no Qdrant server here), seeded through
  each gateway;
- `miss`, `miss-stream`: every request new, answered upstream and stored.
Each phase reports requests/s and p50/p99 latency, both gateways' CPU time per request (from /proc:
what a shared machine distorts least), Redis' commands, bytes and CPU per request (`INFO stats`,
/proc), and the answers whose `x-gateway-cache` was not the path's. A second, shorter pass per path
(`--trace` requests) runs under `redis-cli monitor` and splits Redis commands by layer. Finally the
Qdrant storage engine's bytes per semantic entry are measured at two sizes (`--qdrant`) and
extrapolated to a million entries.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from gateway_dev.bench.common import GatewayProcess, LoadResult, append_section, closed_loop, read_answer
from gateway_dev.bench.redis_accounting import Monitor, ServerStats, Traced, cpu_seconds, entry_bytes
from gateway_dev.bench.semantic_lookup import questions
from gateway_dev.redis_servers import RedisClusterProcs, RedisSingle

KEYS = {"bench": "sk-load-bench", "sem": "sk-load-sem"}
TENANTS: dict[str, dict[str, Any]] = {
    "bench": {"key": KEYS["bench"], "semantic_cache": {"enabled": False}},
    "sem": {"key": KEYS["sem"], "response_cache": {"enabled": False},
            "semantic_cache": {"enabled": True, "threshold": 0.90}},
}
FLUSH_WAIT = 1.2  # seconds: the usage recorder writes every 0.5 s
PATHS = ("hit", "hit-stream", "semantic-hit", "miss", "miss-stream")
EXPECT = {"hit": "response-hit", "hit-stream": "response-hit", "semantic-hit": "semantic-hit", "miss": "miss",
          "miss-stream": "miss"}
# Rewordings the semantic guard accepts as the same question (case, punctuation, greetings, thanks).
VARIANTS: list[Callable[[str], str]] = [
    lambda q: q.lower(), lambda q: q.rstrip("?"), lambda q: "Please, " + q[0].lower() + q[1:],
    lambda q: q + " Thanks!", lambda q: "Hi! " + q, lambda q: q.replace("?", "??"),
    lambda q: q.lower().rstrip("?"), lambda q: "Hi! " + q + " Thanks!", lambda q: "Please, " + q.lower(),
    lambda q: q.rstrip("?") + " Thanks!", lambda q: "Hi! " + q.lower(), lambda q: q.lower() + " Thanks!",
]


@dataclass
class Phase:
    path: str
    load: LoadResult
    gateway_cpu_ms: float  # both gateways' CPU per request
    redis: dict[str, float]
    off: int
    traced: Traced = field(default_factory=Traced)
    traced_requests: int = 0


class Load:
    def __init__(self, urls: list[str], args: argparse.Namespace) -> None:
        self.urls, self.args = urls, args
        self.run_id = uuid.uuid4().hex[:8]
        self.stored = [f"[{self.run_id}] Question {i}: how do retry budgets interact with circuit breakers?"
                       for i in range(args.keys)]
        self.semantic = questions(args.semantic_keys, seed=int(self.run_id, 16) % 1000)
        self.fresh = 0
        self.reworded = 0

    def texts(self, path: str) -> Callable[[int], str]:
        if path.startswith("hit"):
            return lambda i: self.stored[i % len(self.stored)]
        if path == "semantic-hit":
            # every request a new wording (the embedder's LRU must not answer)
            base = len(self.semantic)

            def reworded(i: int) -> str:
                self.reworded += 1
                n = self.reworded
                return VARIANTS[(n // base) % len(VARIANTS)](self.semantic[n % base])
            return reworded

        def new(i: int) -> str:
            self.fresh += 1
            return f"[{self.run_id}] new question {self.fresh}: what limits a retry budget?"
        return new

    def sender(self, path: str, off: list[int]) -> Callable[[aiohttp.ClientSession, int], Any]:
        stream = path.endswith("stream")
        tenant = "sem" if path == "semantic-hit" else "bench"
        headers = {"authorization": f"Bearer {KEYS[tenant]}", "content-type": "application/json"}
        texts, expect = self.texts(path), EXPECT[path]

        async def send(session: aiohttp.ClientSession, i: int) -> tuple[int, float | None]:
            body: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": texts(i)}]}
            if stream:
                body["stream"] = True
            url = self.urls[i % len(self.urls)]
            async with session.post(f"{url}/v1/chat/completions", data=orjson.dumps(body), headers=headers) as resp:
                ttft = await read_answer(resp, stream)
                if resp.status == 200 and resp.headers.get("x-gateway-cache") != expect:
                    off[0] += 1
                return resp.status, ttft

        return send

    async def seed(self) -> None:
        """Store what the hit paths repeat: the exact entries once (in Redis: shared), the semantic
        entries through each gateway (each has its own embedded vector store)."""
        hit_texts = self.texts("hit")
        exact = self._raw_sender("bench", lambda i: hit_texts(i), lambda i: self.urls[i % len(self.urls)])
        await closed_loop(exact, concurrency=min(16, self.args.keys), total=len(self.stored))
        for url in self.urls:
            sem = self._raw_sender("sem", lambda i: self.semantic[i], lambda i, u=url: u)  # type: ignore[misc]
            await closed_loop(sem, concurrency=8, total=len(self.semantic))
        await asyncio.sleep(1.0)  # semantic writes are background tasks

    def _raw_sender(self, tenant: str, text: Callable[[int], str], url: Callable[[int], str]) -> Any:
        headers = {"authorization": f"Bearer {KEYS[tenant]}", "content-type": "application/json"}

        async def send(session: aiohttp.ClientSession, i: int) -> tuple[int, float | None]:
            body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text(i)}]}
            async with session.post(f"{url(i)}/v1/chat/completions", data=orjson.dumps(body), headers=headers) as r:
                await r.read()
                return r.status, None

        return send


def _requests(path: str, args: argparse.Namespace) -> int:
    if path.startswith("miss"):
        return max(args.concurrency * 4, args.requests // 3)  # each goes upstream: fewer
    if path == "semantic-hit":
        return max(args.concurrency * 4, args.requests // 3)  # each embeds a question: slower
    return args.requests


def _servers(redis: RedisSingle | RedisClusterProcs) -> list[tuple[int, int | None]]:
    nodes = [redis.node] if isinstance(redis, RedisSingle) else redis.nodes
    return [(n.port, n.proc.pid if n.proc else None) for n in nodes]


async def run_phases(load: Load, gws: list[GatewayProcess], redis: RedisSingle | RedisClusterProcs,
                     args: argparse.Namespace) -> list[Phase]:
    await load.seed()
    servers = _servers(redis)
    ports = [port for port, _ in servers]
    phases: list[Phase] = []
    for path in args.paths:
        off = [0]
        send = load.sender(path, off)
        await closed_loop(send, concurrency=args.concurrency, total=args.concurrency * 2)  # warm-up
        off[0] = 0
        total = _requests(path, args)
        await asyncio.sleep(FLUSH_WAIT)  # the warm-up's usage records are written before we count
        cpu0 = [cpu_seconds(g.proc.pid if g.proc else None) for g in gws]
        stats0 = ServerStats.read(servers)
        result = await closed_loop(send, concurrency=args.concurrency, total=total)
        await asyncio.sleep(FLUSH_WAIT)  # and this phase's are, before we stop counting
        stats1 = ServerStats.read(servers)
        cpu1 = [cpu_seconds(g.proc.pid if g.proc else None) for g in gws]
        phase = Phase(path, result, sum(b - a for a, b in zip(cpu0, cpu1, strict=True)) * 1000 / total,
                      stats0.per_request(stats1, total), off[0])
        if args.trace:
            with Monitor(ports) as mon:
                await closed_loop(send, concurrency=min(8, args.concurrency), total=args.trace)
            phase.traced, phase.traced_requests = mon.traced, args.trace
        phases.append(phase)
        print(f"{path:<13} {result.rate:7.1f} req/s  p50 {result.pct(50) * 1000:7.2f} ms"
              f"  p99 {result.pct(99) * 1000:7.2f} ms  gateway CPU {phase.gateway_cpu_ms:.2f} ms/req"
              f"  redis {phase.redis['commands']:.2f} cmd/req"
              f"  errors {result.errors}  off-path {off[0]}", flush=True)
    entry = entry_bytes(ports, "gw:rc:{bench}:")
    phases[0].redis["entry_len"], phases[0].redis["entry_mem"] = entry
    return phases


def _start_pair(emu_url: str, redis_url: str) -> list[GatewayProcess]:
    gws = [GatewayProcess(emu_url, TENANTS, redis_url=redis_url) for _ in range(2)]
    errors: list[BaseException] = []

    def start(g: GatewayProcess) -> None:
        try:
            g.start()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(g,)) for g in gws]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    if errors:
        for g in gws:
            g.stop()
        raise errors[0]
    return gws


def report(phases: list[Phase], args: argparse.Namespace, qdrant: Any, load_avg: tuple[float, float]) -> str:
    lines = [
        f"Two gateway processes, {'one redis-server' if args.redis == 'single' else 'a 3-primary Redis Cluster'}, "
        f"the emulators (latency `{args.latency}`) and the load "
        f"generator on this machine ({os.cpu_count()} CPUs, shared with other work: load average "
        f"{load_avg[0]:.1f} before, {load_avg[1]:.1f} after). {args.concurrency} closed-loop clients "
        "alternate between the gateways. *Gateway CPU* is both processes' CPU time per request "
        "(/proc); *per core* is 1000 / that.", "",
        "| path | requests | req/s | p50 ms | p99 ms | gateway CPU ms/req | req/s per gateway core | "
        "Redis cmd/req | Redis bytes in/out per req | Redis CPU µs/req | errors | off-path |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in phases:
        r, red = p.load, p.redis
        lines.append(
            f"| {p.path} | {r.ok} | {r.rate:.0f} | {r.pct(50) * 1000:.1f} | {r.pct(99) * 1000:.1f} | "
            f"{p.gateway_cpu_ms:.2f} | {1000 / p.gateway_cpu_ms if p.gateway_cpu_ms > 0 else float('nan'):.0f} | "
            f"{red['commands']:.2f} | {red['bytes_in']:.0f} / {red['bytes_out']:.0f} | {red['cpu_ms'] * 1000:.0f} | "
            f"{r.errors} | {p.off} |")
    if any(p.traced_requests for p in phases):
        layers = sorted({layer for p in phases for layer in (*p.traced.commands, *p.traced.scripted)})
        lines += ["", f"Redis commands per request by layer (`redis-cli monitor`, {args.trace} requests per path at "
                      "8 clients; usage writes are batched per process every 0.5 s, so their share falls as "
                      "traffic rises; in brackets: commands run inside a Lua script, and bytes of keys and "
                      "values sent):", "",
                  "| path | " + " | ".join(layers) + " |", "|---|" + "---|" * len(layers)]
        for p in phases:
            n = max(1, p.traced_requests)
            cells = [f"{p.traced.commands[layer] / n:.2f} (+{p.traced.scripted[layer] / n:.2f} Lua; "
                     f"{p.traced.arg_bytes[layer] / n:.0f} B)" for layer in layers]
            lines.append(f"| {p.path} | " + " | ".join(cells) + " |")
        flushes = sum(p.traced.flushes for p in phases)
        if flushes:
            per_flush = sum(p.traced.commands["usage"] for p in phases) / flushes
            lines += ["", f"Usage writes: {per_flush:.1f} commands per flush of one process (one tenant and model "
                          "here; aggregates are summed per key before writing, so this grows with the distinct "
                          "tenants, models and templates of a flush, not with requests), plus each request's record "
                          "pushed onto two capped logs."]
    entry_len, entry_mem = phases[0].redis.get("entry_len"), phases[0].redis.get("entry_mem")
    if entry_len == entry_len:  # not NaN
        lines += ["", f"A stored response-cache entry (this run's ~40-token answers): {entry_len:.0f} bytes of value, "
                      f"{entry_mem:.0f} bytes of Redis memory (`MEMORY USAGE`)."]
    if qdrant is not None:
        lines += ["", f"Qdrant engine (qdrant-edge {qdrant.embedder} {qdrant.dim}-d vectors), measured at "
                      f"{qdrant.points[0]:,} and {qdrant.points[1]:,} entries: {qdrant.per_entry:.0f} bytes per entry "
                      f"in segments (vectors {qdrant.dim * 4} B, payload with the compressed answer, payload "
                      f"indexes), {qdrant.wal_per_entry:.0f} bytes of WAL written per entry; extrapolated: "
                      f"{qdrant.per_million / 2**30:.2f} GiB per million entries (no HNSW graph: edge keeps "
                      f"these segments plain). A filtered top-5 search among the {qdrant.points[1]:,} took "
                      f"{qdrant.search_cpu_ms:.2f} ms of CPU."]
    lines += ["", "Command: `llm-cache-gateway bench load " + " ".join(args.argv) + "`"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--requests", type=int, default=1500, help="requests of a hit phase (a third for the others)")
    p.add_argument("--paths", default=",".join(PATHS))
    p.add_argument("--keys", type=int, default=200, help="stored requests the hit paths repeat")
    p.add_argument("--semantic-keys", type=int, default=100, help="stored questions the semantic path rewords")
    p.add_argument("--latency", default="base=0.02,prefill=0,cached=0,itl=0.0005",
                   help="emulator latency model (the miss paths' upstream)")
    p.add_argument("--redis", choices=("single", "cluster"), default="single",
                   help="one redis-server, or a 3-primary Redis Cluster (redis+cluster://)")
    p.add_argument("--trace", type=int, default=150, help="requests per path under MONITOR (0: no trace)")
    p.add_argument("--qdrant", default="1000,5000", help="entry counts of the Qdrant size measurement ('' to skip)")
    p.add_argument("--write", type=Path, default=None, help="replace this benchmark's section of a markdown file")
    args = p.parse_args(argv)
    args.argv = list(argv or [])
    args.paths = [x.strip() for x in args.paths.split(",") if x.strip()]
    unknown = set(args.paths) - set(PATHS)
    if unknown:
        p.error(f"unknown paths: {', '.join(sorted(unknown))}")

    from gateway_dev.emulators.process import EmulatorProcess

    before = os.getloadavg()[0]
    redis_procs = RedisSingle() if args.redis == "single" else RedisClusterProcs(masters=3)
    with EmulatorProcess(latency=args.latency) as emu, redis_procs as redis:
        gws = _start_pair(emu.vendor_url, redis.url)
        try:
            phases = asyncio.run(run_phases(Load([g.url for g in gws], args), gws, redis, args))
        finally:
            for g in gws:
                g.stop()
    qdrant = None
    if args.qdrant:
        from gateway_dev.bench.qdrant_size import measure

        small, large = (int(x) for x in args.qdrant.split(","))
        qdrant = measure(small, large)
    text = report(phases, args, qdrant, (before, os.getloadavg()[0]))
    print(text)
    if args.write:
        append_section(args.write, "Scale-out load: two gateways, one Redis", text)
    return 1 if any(ph.load.errors for ph in phases) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
