"""What each router adds to a request's time to first token, on one idle emulated vLLM replica that answers at
once: `python -m gateway_dev.bench.routing_overhead [--requests 300] [--concurrency 1,8] [--against ...]`.

The same streamed chat request (a ~1500-token prompt, 4 output tokens) is sent straight to the replica and
through each router (ours as its own `llm-cache-gateway serve` process, the peers as `bench routing` starts
them); TTFT p50 per path, its excess over the direct path and the CPU time the router's own processes used per
request are printed. Runs are interleaved in rounds so
a noisy neighbour on the machine spreads over all paths alike.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from gateway_dev.bench.routing import _cpu_seconds
from gateway_dev.bench.routing_peers import PINS, PeerRouter, ensure_venv
from gateway_dev.bench.routing_targets import GatewayProcess, _send
from gateway_dev.bench.routing_workloads import Words

MODEL = "Qwen/Qwen3-8B"


async def _ttfts(http: aiohttp.ClientSession, base: str, headers: dict[str, str], bodies: list[dict[str, Any]],
                 concurrency: int) -> list[float]:
    out: list[float] = []
    queue = list(bodies)

    async def worker() -> None:
        while queue:
            body = queue.pop()
            t0 = time.perf_counter()
            status, _, first = await _send(http, base, body, 4, headers)
            if status == 200:
                out.append(first - t0)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return out


async def main_async(args: argparse.Namespace) -> int:
    from gateway.config import RoutingConfig
    from gateway_dev.emulators.process import EmulatorProcess

    peers = [p for p in args.against.split(",") if p]
    if peers:
        await asyncio.to_thread(ensure_venv, peers)
    emulator = EmulatorProcess(vllm_replicas=1, latency="zero", extra_args=["--model", MODEL])
    await asyncio.to_thread(emulator.start)
    url = emulator.vllm_urls[0]
    w = Words(3)
    bodies = [{"model": MODEL, "stream": True, "max_tokens": 4,
               "messages": [{"role": "system", "content": w.text(1500)}, {"role": "user", "content": w.text(100)}]}
              for _ in range(args.requests)]
    scratch = tempfile.TemporaryDirectory(prefix="bench-routing-overhead-")
    ours = GatewayProcess(None, [url], RoutingConfig(policy="cache_aware"), Path(scratch.name))  # type: ignore[arg-type]
    routers = [PeerRouter(p, [url]) for p in peers]
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=3)) as http:
            ours.http = http
            await ours.start()
            for r in routers:
                await asyncio.to_thread(r.start)
            paths = {"direct": (url + "/v1", {}), "cache_aware (ours)": (
                ours.url + "/v1", {"authorization": f"Bearer {GatewayProcess.KEY}"})}
            paths.update({r.name: (r.url, {}) for r in routers})
            pids = {"cache_aware (ours)": ours.proc.pid if ours.proc else None,
                    **{r.name: r.proc.pid if r.proc else None for r in routers}}
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                got: dict[str, list[float]] = {name: [] for name in paths}
                cpu: dict[str, float] = {name: 0.0 for name in paths}
                for _ in range(args.rounds):
                    for name, (base, headers) in paths.items():
                        pid = pids.get(name)
                        before = _cpu_seconds(pid) if pid is not None else None
                        got[name] += await _ttfts(http, base, headers, bodies, concurrency)
                        after = _cpu_seconds(pid) if pid is not None else None
                        if before is not None and after is not None:
                            cpu[name] += after - before
                direct = statistics.median(got["direct"])
                print(f"{concurrency} concurrent client(s), {args.rounds} rounds x {args.requests} requests")
                for name, values in got.items():
                    p50 = statistics.median(values)
                    used = f"  CPU {cpu[name] / len(values) * 1000:5.2f} ms/request" if cpu[name] and values else ""
                    print(f"  {name:<20} TTFT p50 {p50 * 1000:7.2f} ms  over direct {(p50 - direct) * 1000:6.2f} ms"
                          f"  ({len(values)} answered){used}")
    finally:
        for r in routers:
            await asyncio.to_thread(r.stop)
        await ours.stop()
        await asyncio.to_thread(emulator.stop)
        scratch.cleanup()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gateway_dev.bench.routing_overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", default="1,8")
    p.add_argument("--against", default=",".join(PINS))
    return asyncio.run(main_async(p.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
