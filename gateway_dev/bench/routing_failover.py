"""`bench routing --failover`: a replica dies mid-run; how many client requests fail, for ours and each peer.

Three replicas, each its own emulator process (so one can really die: SIGKILL, its port then refuses
connections and open streams are cut). Agent sessions as in workload (a) run through the target; once a
third of the requests are done, one replica's process is killed. A request counts as failed when the client
got an error or no answer; a stream the dying replica was already sending is counted apart (cut mid-stream):
once bytes reached the client no router can retry it. The same sessions, replicas and kill point for every target.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from gateway_dev.bench.routing_workloads import Workload

MODEL = "Qwen/Qwen3-8B"


async def failover_one(http: aiohttp.ClientSession, name: str, wl: Workload, concurrency: int,
                       params: dict[str, Any], folder: Path, latency: str) -> dict[str, Any]:
    from gateway.config import RoutingConfig
    from gateway_dev.bench.routing import POLICIES
    from gateway_dev.bench.routing_peers import PINS, PeerTarget
    from gateway_dev.bench.routing_targets import _CLIENT_ERRORS, GatewayProcess
    from gateway_dev.emulators.process import EmulatorProcess

    procs = [EmulatorProcess(vllm_replicas=1, latency=latency, extra_args=[
        "--kv-capacity-blocks", "4096", "--max-num-seqs", "8", "--model", MODEL, "--shared-prefill"]) for _ in range(3)]
    await asyncio.gather(*(asyncio.to_thread(p.start) for p in procs))
    urls = [p.vllm_urls[0] for p in procs]
    target: Any
    if name in PINS:
        target = PeerTarget(http, name, urls)
    else:
        routing = RoutingConfig(policy=name if name in POLICIES else "cache_aware", health_interval=1.0,
                                metrics_interval=0.5, params=params)
        target = GatewayProcess(http, urls, routing, folder / f"failover-{name}")
    statuses: Counter[str] = Counter()
    _CLIENT_ERRORS.clear()
    try:
        await target.start()
        total = wl.requests
        queue = list(reversed(wl.sessions))
        done = 0
        killed_at: float | None = None

        async def worker() -> None:
            nonlocal done, killed_at
            while queue:
                session = queue.pop()
                messages = list(session.messages)
                for turn in range(1 + len(session.followups)):
                    body = {"model": MODEL, "messages": messages, "stream": True, "max_tokens": wl.output_tokens}
                    status, text, _ = await target.call(body, wl.output_tokens)
                    statuses[str(status)] += 1
                    done += 1
                    if killed_at is None and done >= total // 3:
                        killed_at = time.monotonic()
                        procs[0].proc.kill()  # type: ignore[union-attr]  # SIGKILL: a crashed replica
                    if status != 200:
                        break
                    if turn < len(session.followups):
                        messages = [*messages, {"role": "assistant", "content": text},
                                    {"role": "user", "content": session.followups[turn]}]

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await target.stop()
        for p in procs:
            await asyncio.to_thread(p.stop)
    ok = statuses.pop("200", 0)
    if statuses.pop("599", 0):  # client-side failures (a cut stream, a refused connection): say which
        statuses.update(_CLIENT_ERRORS)
    # A stream the dying replica was sending is cut mid-answer: no router can retry once bytes reached the
    # client. Everything else (an error status, a refused connection) is what failover must prevent.
    cut = sum(n for k, n in statuses.items() if k.startswith("ClientPayloadError"))
    return {"requests": ok + sum(statuses.values()), "failed": sum(statuses.values()) - cut, "cut_mid_stream": cut,
            "by_status": dict(statuses)}


def report(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["Failover: one of 3 replicas killed (SIGKILL) after a third of the requests",
             f"  {'router':<16}{'requests':>9}{'failed':>8}{'cut mid-stream':>16}  by status",]
    for name, r in results.items():
        lines.append(f"  {name:<16}{r['requests']:9d}{r['failed']:8d}{r['cut_mid_stream']:16d}  "
                     f"{r['by_status'] or '-'}")
    lines.append("  failed: an error answer or a refused connection (what failover must prevent); cut mid-stream: "
                 "the dying replica's streams already under way (no router can retry those)")
    return lines
