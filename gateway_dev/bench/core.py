"""Gateway vs direct-to-emulator, in the same run: added latency (p50/p99) and throughput ratio
for OpenAI chat requests, non-stream and stream, at N concurrent clients.

    llm-cache-gateway bench core [--concurrency 100] [--requests 3000] [--latency base=1.0,itl=0.0005] [--stagger 1.0]

The emulators and the gateway each run in their own process; the load generator is this one. The
tenant's caches are off, so every request takes the full proxy path to the upstream (a miss).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import aiohttp
import orjson

from gateway_dev.bench.common import (
    GatewayProcess,
    LoadResult,
    append_section,
    closed_loop,
    cpu_seconds,
    fmt_ms,
    summary,
)
from gateway_dev.emulators.process import EmulatorProcess

KEY = "bench-key"


def _body(i: int, stream: bool) -> bytes:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"Question {i}: what is a retry budget?"}],
            "max_tokens": 40}
    if stream:
        body["stream"] = True
    return orjson.dumps(body)


def _request(base: str, key: str, stream: bool):  # type: ignore[no-untyped-def]
    url = f"{base}/chat/completions"
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}

    async def send(session: aiohttp.ClientSession, i: int) -> tuple[int, float | None]:
        async with session.post(url, data=_body(i, stream), headers=headers) as resp:
            if not stream:
                await resp.read()
                return resp.status, None
            ttft = None
            async for _ in resp.content.iter_any():
                if ttft is None:
                    ttft = time.perf_counter()
            return resp.status, ttft
    return send


async def _run(args: argparse.Namespace, vendor_url: str, gateway_url: str,
               gateway_pid: int) -> list[tuple[str, LoadResult, LoadResult, float]]:
    rows = []
    load = {"concurrency": args.concurrency, "total": args.requests, "warmup": args.concurrency * 2,
            "stagger": args.stagger}
    for stream in (False, True):
        kind = "stream" if stream else "non-stream"
        direct = await closed_loop(_request(f"{vendor_url}/v1", "sk-bench", stream), **load)
        cpu0 = cpu_seconds(gateway_pid)
        via = await closed_loop(_request(f"{gateway_url}/v1", KEY, stream), **load)
        cpu_ms = (cpu_seconds(gateway_pid) - cpu0) / max(1, via.ok + via.errors + args.concurrency * 2) * 1000
        rows.append((kind, direct, via, cpu_ms))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench core", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--latency", default="base=1.0,prefill=0,cached=0,itl=0.0005",
                   help="emulator latency model (an upstream answer takes ~1 s, like a short LLM answer)")
    p.add_argument("--stagger", type=float, default=1.0,
                   help="spread the clients' first requests over this many seconds (one upstream latency)")
    p.add_argument("--write", type=Path, default=None, help="append the table to this markdown file")
    args = p.parse_args(argv)

    with EmulatorProcess(latency=args.latency) as emu, GatewayProcess(
        emu.vendor_url, {"bench": {"key": KEY, "response_cache": {"enabled": False},
                                   "semantic_cache": {"enabled": False}, "prompt_rewrite": {"enabled": False}}},
    ) as gw:
        assert gw.proc is not None
        rows = asyncio.run(_run(args, emu.vendor_url, gw.url, gw.proc.pid))

    lines = [f"concurrency {args.concurrency}, {args.requests} requests per run, emulator latency `{args.latency}`", "",
             "| path | direct p50 ms | gateway p50 ms | added p50 ms | direct p99 ms | gateway p99 ms | added p99 ms "
             "| throughput ratio | gateway CPU ms/req | errors |", "|---|---|---|---|---|---|---|---|---|---|"]
    for kind, direct, via, cpu_ms in rows:
        print(summary(f"direct {kind}", direct))
        print(summary(f"gateway {kind}", via))
        add50, add99 = via.pct(50) - direct.pct(50), via.pct(99) - direct.pct(99)
        ratio = via.rate / direct.rate if direct.rate else float("nan")
        print(f"  added p50 {fmt_ms(add50)} ms, added p99 {fmt_ms(add99)} ms, throughput ratio {ratio:.3f}, "
              f"gateway CPU {cpu_ms:.2f} ms/request")
        lines.append(f"| {kind} | {fmt_ms(direct.pct(50))} | {fmt_ms(via.pct(50))} | {fmt_ms(add50)} | "
                     f"{fmt_ms(direct.pct(99))} | {fmt_ms(via.pct(99))} | {fmt_ms(add99)} | {ratio:.3f} | "
                     f"{cpu_ms:.2f} | {direct.errors}/{via.errors} |")
    lines += ["", "Command: `llm-cache-gateway bench core " + " ".join(argv or []) + "`"]
    if args.write:
        append_section(args.write, "Gateway core: added latency on the proxy path", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
