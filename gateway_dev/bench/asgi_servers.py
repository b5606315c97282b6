"""The gateway under two ASGI servers in one run: uvicorn (uvloop + httptools, what `serve` runs) and
granian (Rust HTTP, `--interface asgi`, uvloop), same app factory, emulator, Redis and load.

Both run all the time; hit and miss phases alternate A, B, A, B. Per server: CPU per Redis hit and per
miss (the whole process tree, from /proc), hits/s at the same closed-loop clients, RSS, ready time, and
a streamed answer checked event by event against the non-stream one (streaming must stay intact for a
server to be a candidate). granian is not a dependency of the gateway: without it installed this
comparison says so and is skipped.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import statistics
import sys
import time
from typing import Any

import aiohttp
import orjson

from gateway_dev.bench.common import GatewayProcess, closed_loop
from gateway_dev.bench.litellm_proxy import tree_cpu_seconds, tree_rss_mib

KEY = "bench-key"
MODEL = "gpt-4o-mini"


class GranianProcess(GatewayProcess):
    def command(self) -> list[str]:
        exe = shutil.which("granian") or str(sys.executable).rsplit("/", 1)[0] + "/granian"
        return [exe, "--interface", "asgi", "--factory", "--loop", "uvloop", "--host", "127.0.0.1",
                "--port", str(self.port), "--workers", str(self.workers), "--log-level", "warning",
                "--no-ws", "gateway.app:app_from_env"]


def available() -> str | None:
    """None when granian can run here, else why not."""
    if importlib.util.find_spec("granian") is None:
        return "granian is not installed in this environment (`pip install granian` to compare)"
    return None


def _sender(base: str, text, check_hit: bool, stats: dict[str, int]):  # type: ignore[no-untyped-def]
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}

    async def send(session: aiohttp.ClientSession, i: int) -> tuple[int, float | None]:
        body = orjson.dumps({"model": MODEL, "messages": [{"role": "user", "content": text(i)}]})
        async with session.post(f"{base}/v1/chat/completions", data=body, headers=headers) as resp:
            await resp.read()
            if check_hit and resp.status == 200:
                stats["not_hit"] += resp.headers.get("x-gateway-cache") != "response-hit"
            return resp.status, None

    return send


async def _stream_intact(base: str, tag: int) -> bool:
    """A streamed answer's text equals the non-stream answer to the same new prompt, and ends in [DONE]."""
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    msgs = [{"role": "user", "content": f"[{tag}] stream check: explain retry budgets"}]
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{base}/v1/chat/completions", headers=headers,
                                data=orjson.dumps({"model": MODEL, "messages": msgs, "stream": True})) as r:
            raw = (await r.read()).decode()
        events = [line[6:] for line in raw.split("\n") if line.startswith("data: ")]
        if not events or events[-1] != "[DONE]":
            return False
        text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in orjson.loads(e)["choices"])
        async with session.post(f"{base}/v1/chat/completions", headers=headers,
                                data=orjson.dumps({"model": MODEL, "messages": msgs})) as r:
            whole = orjson.loads(await r.read())["choices"][0]["message"]["content"]
    return bool(text) and text == whole


async def _measure(procs: dict[str, GatewayProcess], rounds: int, hits: int, misses: int,
                   concurrency: int) -> dict[str, dict[str, Any]]:
    tag = time.time_ns()
    prompts = [f"[{tag}] Question {i}: what is a retry budget?" for i in range(100)]
    out: dict[str, dict[str, Any]] = {}
    for name, proc in procs.items():
        stats = {"not_hit": 0}
        base = proc.url
        await closed_loop(_sender(base, lambda i, n=name: f"[{tag}] warm {n} {i}", False, stats),
                          concurrency=8, total=24)
        await closed_loop(_sender(base, lambda i: prompts[i], False, stats), concurrency=8, total=len(prompts))
        await closed_loop(_sender(base, lambda i: prompts[i % 100], True, stats), concurrency=concurrency, total=128)
        out[name] = {"stats": {"not_hit": 0}, "hit": [], "miss": [], "rate": [], "errors": 0,
                     "ready_s": proc.ready_s, "stream_intact": await _stream_intact(base, tag)}
    for r in range(rounds):
        for name, proc in procs.items():
            pid, o = proc.proc.pid if proc.proc else None, out[name]
            c0 = tree_cpu_seconds(pid)
            m = await closed_loop(_sender(proc.url, lambda i, n=name, r=r: f"[{tag}] {n} r{r} miss {i}", False,
                                          o["stats"]), concurrency=8, total=misses)
            c1 = tree_cpu_seconds(pid)
            h = await closed_loop(_sender(proc.url, lambda i: prompts[i % 100], True, o["stats"]),
                                  concurrency=concurrency, total=hits)
            c2 = tree_cpu_seconds(pid)
            o["miss"].append((c1 - c0) * 1000 / misses)
            o["hit"].append((c2 - c1) * 1000 / hits)
            o["rate"].append(h.rate)
            o["errors"] += m.errors + h.errors
    for name, proc in procs.items():
        o = out[name]
        o["rss_end_mib"] = tree_rss_mib(proc.proc.pid if proc.proc else None)
        o["cpu_ms_per_hit"], o["cpu_ms_per_miss"] = statistics.fmean(o["hit"]), statistics.fmean(o["miss"])
        o["hits_per_s"] = statistics.fmean(o["rate"])
        o["not_hit"] = o.pop("stats")["not_hit"]
    return out


def compare_servers(vendor_url: str, redis_url: str, *, rounds: int = 2, hits: int = 2000, misses: int = 200,
                    concurrency: int = 32) -> dict[str, Any]:
    """uvicorn vs granian, default layers, one worker each (databases 5 and 6 of `redis_url`'s server)."""
    why = available()
    if why is not None:
        return {"skipped": why}
    tenants = {"bench": {"key": KEY, "semantic_cache": {"enabled": False}}}
    root = redis_url.rsplit("/", 1)[0]
    with GatewayProcess(vendor_url, tenants, redis_url=f"{root}/5") as uv, \
            GranianProcess(vendor_url, tenants, redis_url=f"{root}/6") as gr:
        return asyncio.run(_measure({"uvicorn": uv, "granian": gr}, rounds, hits, misses, concurrency))


def servers_lines(result: dict[str, Any] | None) -> list[str]:
    if result is None:
        return []
    lines = ["", "### ASGI servers: uvicorn vs granian", ""]
    if "skipped" in result:
        return [*lines, f"Skipped: {result['skipped']}."]
    uv, gr = result["uvicorn"], result["granian"]
    rows = [("CPU ms per Redis hit", "cpu_ms_per_hit", "{:.3f}"), ("CPU ms per miss", "cpu_ms_per_miss", "{:.3f}"),
            ("hits/s (32 clients)", "hits_per_s", "{:.0f}"), ("RSS MiB at the end", "rss_end_mib", "{:.0f}"),
            ("ready after start, s", "ready_s", "{:.2f}")]
    lines += ["The gateway alone under each server (`gateway.app:app_from_env`, one worker, default layers), "
              "phases interleaved A, B, A, B; 200 misses at 8 clients and 2000 hits at 32 clients per phase.", "",
              "| measure | uvicorn (uvloop, httptools) | granian (asgi, uvloop) | granian ÷ uvicorn |",
              "|---|---|---|---|"]
    for label, key, fmt in rows:
        lines.append(f"| {label} | {fmt.format(uv[key])} | {fmt.format(gr[key])} | {gr[key] / uv[key]:.2f} |")
    lines.append(f"| stream intact (text equal to the non-stream answer, ends in [DONE]) | {uv['stream_intact']} "
                 f"| {gr['stream_intact']} | |")
    lines.append(f"| errors / hits not marked | {uv['errors']} / {uv['not_hit']} "
                 f"| {gr['errors']} / {gr['not_hit']} | |")
    return lines
