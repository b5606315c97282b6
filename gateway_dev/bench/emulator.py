"""Benchmark: how many chat requests per second one vLLM emulator replica sustains with zero latency.

The replica runs in a subprocess (`EmulatorProcess`), the load generator here (aiohttp, many concurrent
connections). Same run, same server: `GET /health` first, as the HTTP-stack ceiling the chat figure is
compared against. Target: >= 500 chat req/s, so the emulators never bound the gateway's benchmarks.

    .venv/bin/python -m gateway_dev.bench.emulator [--duration 10] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from typing import Any

import aiohttp
import orjson

from gateway_dev.emulators.process import EmulatorProcess

HEADERS = {"content-type": "application/json"}
SYSTEMS = [f"You are assistant #{i} of the support team. Answer briefly and cite the handbook section. " * 12
           for i in range(8)]


def _payload(rng: random.Random, max_tokens: int) -> dict[str, Any]:
    return {"model": "Qwen/Qwen3-8B", "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": rng.choice(SYSTEMS)},
                         {"role": "user", "content": f"Question {rng.randrange(10_000)}: how do I reset my password?"}]}


async def _load(url: str, duration: float, concurrency: int, make: Any) -> tuple[int, int, list[float]]:
    ok = errors = 0
    latencies: list[float] = []
    deadline = time.perf_counter() + duration
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker(seed: int) -> None:
            nonlocal ok, errors
            rng = random.Random(seed)
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                method, body = make(rng)
                try:
                    async with session.request(method, url, data=body, headers=HEADERS) as resp:
                        await resp.read()
                        if resp.status == 200:
                            ok += 1
                            latencies.append(time.perf_counter() - t0)
                        else:
                            errors += 1
                except aiohttp.ClientError:
                    errors += 1

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return ok, errors, latencies


def _report(name: str, ok: int, errors: int, lat: list[float], duration: float) -> float:
    rate = ok / duration
    p50 = statistics.median(lat) * 1000 if lat else float("nan")
    p99 = sorted(lat)[int(len(lat) * 0.99) - 1] * 1000 if len(lat) >= 100 else float("nan")
    print(f"{name:<28} {rate:9.1f} req/s   ok={ok} errors={errors}   p50={p50:.2f} ms  p99={p99:.2f} ms")
    return rate


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gateway_dev.bench.emulator", description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=10.0, help="seconds per measured phase")
    p.add_argument("--warmup", type=float, default=2.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--max-tokens", type=int, default=32, help="answer length of each chat request")
    p.add_argument("--target", type=float, default=500.0)
    args = p.parse_args(argv)

    with EmulatorProcess(vllm_replicas=1, latency="zero") as emu:
        root = emu.vllm_urls[0]
        chat_url, health_url = f"{root}/v1/chat/completions", f"{root}/health"

        # Bodies are encoded up front: the load generator shares the machine and should spend little CPU.
        pool_rng = random.Random(7)
        bodies = [orjson.dumps(_payload(pool_rng, args.max_tokens)) for _ in range(4000)]

        def chat(rng: random.Random) -> tuple[str, Any]:
            return "POST", bodies[rng.randrange(len(bodies))]

        def health(rng: random.Random) -> tuple[str, Any]:
            return "GET", None

        asyncio.run(_load(chat_url, args.warmup, args.concurrency, chat))
        print(f"one vLLM emulator replica in a subprocess, zero latency, {args.concurrency} connections, "
              f"{args.duration:g} s per phase (machine shared with other work: figures are noisy)")
        h = _report("GET /health (HTTP ceiling)", *asyncio.run(_load(health_url, args.duration, args.concurrency,
                                                                     health)), args.duration)
        c = _report("POST /v1/chat/completions", *asyncio.run(_load(chat_url, args.duration, args.concurrency,
                                                                    chat)), args.duration)
        kv = emu.state(root).get("kv", {})
        hit_rate = kv.get("hits", 0) / max(1, kv.get("queries", 1))
        print(f"chat / health ratio: {c / h:.2f}   prefix-cache hit rate during the run: {hit_rate:.1%}")
        verdict = "PASS" if c >= args.target else "BELOW TARGET"
        print(f"chat throughput {c:.0f} req/s vs target {args.target:.0f} req/s: {verdict}")
    return 0 if c >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
