"""`llm-cache-gateway bench response-cache`: response-cache hits against the miss path, same run.

    llm-cache-gateway bench response-cache [--concurrency 50] [--requests 6000] [--rate 500]
        [--backends redis,memory] [--latency base=0.1,prefill=0,cached=0,itl=0.0005] [--write docs/benchmarks.md]

Processes: a `redis-server` on loopback (started here), the vendor emulators, the gateway
(`llm-cache-gateway serve`, every layer; the tenant's semantic cache off) and this load generator
(aiohttp), each its own process.
For each backend (Redis, then the embedded store):
1. misses: `--concurrency` closed-loop clients send OpenAI Chat requests that are all different, so
   each goes upstream (the emulator answers in ~120 ms with the default latency) and is stored;
2. hits, closed loop: the same clients repeat `--keys` stored requests (non-stream, then stream):
   the most hits per second the gateway serves at that concurrency. In a closed loop the latency is
   the queueing time too (Little's law: p50 ≈ concurrency / throughput);
3. hits, open loop: requests arrive at a fixed `--rate` per second over the same number of client
   connections: the latency of a hit when the gateway is not saturated.
Every answer's `x-gateway-cache` is checked (a hit phase with anything but `response-hit` fails).
Besides wall-clock latency, each phase reports the gateway process's CPU time per request (from
/proc): on a machine shared with other work, queueing inflates wall time, CPU per request much less.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import orjson

from gateway_dev.bench.common import (
    GatewayProcess,
    LoadResult,
    append_section,
    closed_loop,
    fmt_ms,
    read_answer,
    summary,
)
from gateway_dev.redis_servers import RedisSingle

KEY = "bench-key"
MODEL = "gpt-4o-mini"


# ---- the processes ----------------------------------------------------------------------------


# One real redis-server on a free port for the benchmark (stopped by pid on exit).
RedisProcess = RedisSingle


def cpu_seconds(proc: subprocess.Popen[bytes] | None) -> float:
    """CPU time a process has used (Linux /proc), NaN elsewhere. CPU per request is what a shared
    machine distorts least: queueing behind other processes adds wall time only."""
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()  # type: ignore[union-attr]
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return float("nan")


# ---- load -------------------------------------------------------------------------------------


def _body(text: str, stream: bool) -> bytes:
    body: dict[str, object] = {"model": MODEL, "messages": [{"role": "user", "content": text}]}
    if stream:
        body["stream"] = True
    return orjson.dumps(body)


Send = Callable[[aiohttp.ClientSession, int], Awaitable[tuple[int, float | None]]]


def _sender(url: str, texts: Callable[[int], str], stream: bool, expect: str, off: list[int]) -> Send:
    """Requests whose answers should say `x-gateway-cache: expect`; `off[0]` counts those that
    did not (a hit phase's misses: the store failed open, or the entry was not there)."""
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    bodies: dict[str, bytes] = {}

    async def send(session: aiohttp.ClientSession, i: int) -> tuple[int, float | None]:
        text = texts(i)
        body = bodies.get(text) or _body(text, stream)
        async with session.post(f"{url}/v1/chat/completions", data=body, headers=headers) as resp:
            ttft = await read_answer(resp, stream)
            if resp.status == 200 and resp.headers.get("x-gateway-cache") != expect:
                off[0] += 1
            return resp.status, ttft

    return send


async def open_loop(send: Send, *, rate: float, total: int, connections: int) -> LoadResult:
    """Requests start at a fixed rate (not when the previous one ended), over `connections`."""
    result = LoadResult()
    limit = asyncio.Semaphore(connections)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections)) as session:

        async def one(i: int, due: float) -> None:
            async with limit:
                try:
                    status, _ = await send(session, i)
                except (TimeoutError, aiohttp.ClientError):
                    result.errors += 1
                    return
            if status < 400:
                result.latencies.append(time.perf_counter() - due)  # from when it was due: no coordinated omission
            else:
                result.errors += 1

        t0 = time.perf_counter()
        tasks = []
        for i in range(total):
            due = t0 + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i, due)))
        await asyncio.gather(*tasks)
        result.elapsed = time.perf_counter() - t0
    return result


async def run_backend(gw: GatewayProcess, args: argparse.Namespace, tag: str, cpu: dict[str, float],
                      off: dict[str, list[int]]) -> dict[str, LoadResult]:
    """The phases against one gateway; `cpu` gets the gateway's CPU ms per request of each phase,
    `off` the number of answers whose x-gateway-cache was not the phase's."""
    url = gw.url
    for phase in ("miss", "hit non-stream", "hit stream", "hit open-loop", "-"):
        off[phase] = [0]
    run = f"{tag}-{time.time_ns()}"
    prompts = [f"[{run}] Question {i}: how do retry budgets interact with circuit breakers?" for i in range(args.keys)]
    rows: dict[str, LoadResult] = {}
    n_miss = max(args.concurrency * 4, args.requests // 10)
    # Misses: each request different, so each goes upstream (and is stored).
    c0 = cpu_seconds(gw.proc)
    rows["miss"] = await closed_loop(
        _sender(url, lambda i: f"[{run}] miss {i}: how do retry budgets interact?", False, "miss", off["miss"]),
        concurrency=args.concurrency, total=n_miss)
    cpu["miss"] = (cpu_seconds(gw.proc) - c0) * 1000 / n_miss
    # Store the hit set (these are misses too), then hit it.
    await closed_loop(_sender(url, lambda i: prompts[i], False, "miss", off["-"]),
                      concurrency=min(args.concurrency, args.keys), total=args.keys)
    for stream in (False, True):
        kind = "stream" if stream else "non-stream"
        warm = _sender(url, lambda i: prompts[i % len(prompts)], stream, "response-hit", off["-"])
        await closed_loop(warm, concurrency=args.concurrency, total=args.concurrency * 4)
        sender = _sender(url, lambda i: prompts[i % len(prompts)], stream, "response-hit", off[f"hit {kind}"])
        c0 = cpu_seconds(gw.proc)
        rows[f"hit {kind}"] = await closed_loop(sender, concurrency=args.concurrency, total=args.requests)
        cpu[f"hit {kind}"] = (cpu_seconds(gw.proc) - c0) * 1000 / args.requests
    total = int(args.rate * args.open_seconds)
    c0 = cpu_seconds(gw.proc)
    rows["hit open-loop"] = await open_loop(
        _sender(url, lambda i: prompts[i % len(prompts)], False, "response-hit", off["hit open-loop"]),
        rate=args.rate, total=total, connections=args.concurrency)
    cpu["hit open-loop"] = (cpu_seconds(gw.proc) - c0) * 1000 / total
    return rows


def _verdict(results: list[tuple[str, dict[str, LoadResult], dict[str, float]]],
             args: argparse.Namespace) -> list[str]:
    """The issue's targets (hit p50 <= 3 ms at 50 clients, >= 1,500 hits/s), read off this run."""
    out = ["Targets: hit p50 ≤ 3 ms at 50 concurrent clients, ≥ 1,500 hits/s."]
    for backend, rows, cpu in results:
        closed, opened = rows["hit non-stream"], rows["hit open-loop"]
        out.append(
            f"- {backend}: {closed.rate:.0f} hits/s with {args.concurrency} closed-loop clients "
            f"({'met' if closed.rate >= 1500 else 'not met'}; the gateway is one process using "
            f"{cpu['hit non-stream']:.2f} ms of CPU per hit, so one core serves at most "
            f"~{1000 / cpu['hit non-stream']:.0f}/s); p50 {opened.pct(50) * 1000:.2f} ms when hits arrive at "
            f"{args.rate:g}/s over {args.concurrency} connections "
            f"({'met' if opened.pct(50) <= 0.003 else 'not met'}). In the closed loop every client waits "
            f"for its previous answer, so its p50 ({closed.pct(50) * 1000:.1f} ms) is mostly queueing: "
            f"{args.concurrency} clients / {closed.rate:.0f} per s.")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench response-cache", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=50, help="client connections (closed-loop clients)")
    p.add_argument("--requests", type=int, default=6000, help="requests per closed-loop hit phase")
    p.add_argument("--keys", type=int, default=200, help="distinct stored requests the hit phases repeat")
    p.add_argument("--rate", type=float, default=500.0, help="open-loop arrival rate, requests/s")
    p.add_argument("--open-seconds", type=float, default=5.0, help="length of the open-loop phase")
    p.add_argument("--backends", default="redis,memory", help="comma-separated: redis, memory")
    p.add_argument("--latency", default="base=0.1,prefill=0,cached=0,itl=0.0005",
                   help="emulator latency model for the miss path (~120 ms an answer)")
    p.add_argument("--write", type=Path, default=None, help="replace this benchmark's section of a markdown file")
    args = p.parse_args(argv)

    from gateway_dev.emulators.process import EmulatorProcess

    results: list[tuple[str, dict[str, LoadResult], dict[str, float]]] = []
    offs: dict[str, dict[str, list[int]]] = {}
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with EmulatorProcess(latency=args.latency) as emu, RedisProcess() as redis:
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            tenants = {"bench": {"key": KEY, "semantic_cache": {"enabled": False}}}
            with GatewayProcess(emu.vendor_url, tenants, redis_url=redis.url if backend == "redis" else None) as gw:
                cpu: dict[str, float] = {}
                offs[backend] = {}
                results.append((backend, asyncio.run(run_backend(gw, args, backend, cpu, offs[backend])), cpu))
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    lines = [f"{args.concurrency} client connections; closed-loop hit phases of {args.requests} requests over "
             f"{args.keys} stored requests; open loop at {args.rate:g} req/s for {args.open_seconds:g} s; "
             f"miss path: emulator latency `{args.latency}`. {os.cpu_count()} CPUs, load average "
             f"{load_before:.1f} before and {load_after:.1f} after the run (other work on the machine "
             "shares the CPUs: wall-clock figures are pessimistic, CPU per request much less so). "
             "*Answers not of the phase*: in a hit phase, answers that came back `miss` because a store "
             "call failed open (on a saturated machine Redis itself can be descheduled past its deadline).",
             "",
             "| store | phase | requests | errors | answers not of the phase | p50 ms | p99 ms | req/s | p50 vs miss "
             "| gateway CPU ms/req | req/s per gateway core |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    failed = False
    for backend, rows, cpu in results:
        miss = rows["miss"]
        for phase, r in rows.items():
            print(summary(f"{backend} {phase}", r) + f"  cpu={cpu[phase]:.2f} ms/req  off={offs[backend][phase][0]}")
            failed |= r.errors > 0
            ratio = miss.pct(50) / r.pct(50) if phase != "miss" and r.latencies else float("nan")
            lines.append(f"| {backend} | {phase} | {r.ok} | {r.errors} | {offs[backend][phase][0]} | "
                         f"{fmt_ms(r.pct(50)).strip()} | "
                         f"{fmt_ms(r.pct(99)).strip()} | {r.rate:.0f} | "
                         f"{'' if phase == 'miss' else f'{ratio:.1f}x lower'} | {cpu[phase]:.2f} | "
                         f"{1000 / cpu[phase] if cpu[phase] > 0 else float('nan'):.0f} |")
    lines += ["", *_verdict(results, args)]
    lines += ["", "Command: `llm-cache-gateway bench response-cache " + " ".join(argv or []) + "`"]
    print("\n".join(lines))
    if args.write:
        append_section(args.write, "Response cache: hits vs the miss path", "\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
