"""Shared benchmark parts: the gateway in a subprocess, a closed-loop HTTP load generator, and
percentile tables. Every benchmark prints ratios against a baseline measured in the same run."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from gateway_dev.localrun import free_port, write_policies

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "LITELLM_OFFLINE_MODE": "true"}


class GatewayProcess:
    """`llm-cache-gateway serve` in its own process, pointed at emulators, with its own policies."""

    def __init__(self, vendor_url: str, tenants: Mapping[str, Mapping[str, Any]], *,
                 vllm_urls: list[str] | None = None, redis_url: str | None = None, env: Mapping[str, str] | None = None,
                 defaults: Mapping[str, Any] | None = None, port: int | None = None, workers: int = 1) -> None:
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="gw-bench-"))
        write_policies(self.dir / "policies", tenants, defaults)
        self.env = {
            **os.environ, **OFFLINE_ENV,
            "GATEWAY_POLICIES": str(self.dir / "policies"), "GATEWAY_DATA_DIR": str(self.dir / "data"),
            "GATEWAY_OPENAI_BASE_URL": f"{vendor_url}/v1", "GATEWAY_DEEPSEEK_BASE_URL": f"{vendor_url}/v1",
            "GATEWAY_ANTHROPIC_BASE_URL": vendor_url, "GATEWAY_GEMINI_BASE_URL": vendor_url,
            "OPENAI_API_KEY": "sk-bench", "ANTHROPIC_API_KEY": "sk-bench", "GEMINI_API_KEY": "bench",
            "DEEPSEEK_API_KEY": "sk-bench", "GATEWAY_ADMIN_KEY": "bench-admin",
        }
        self.env.pop("GATEWAY_REDIS_URL", None)
        if redis_url:
            self.env["GATEWAY_REDIS_URL"] = redis_url
        if vllm_urls:
            self.env["GATEWAY_VLLM_ENDPOINTS"] = ",".join(vllm_urls)
        self.env.update(env or {})
        self.workers = workers
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_s = float("nan")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "gateway", "serve", "--port", str(self.port), "--log-level", "warning",
                "--workers", str(self.workers)]

    def start(self, timeout: float = 120.0) -> GatewayProcess:
        self.log = open(self.dir / "gateway.log", "wb")  # noqa: SIM115 - closed in stop()
        started = time.monotonic()
        self.proc = subprocess.Popen(self.command(), env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited: {(self.dir / 'gateway.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=1) as r:
                    if r.status == 200:
                        self.ready_s = time.monotonic() - started  # from the exec to /readyz 200
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError("gateway did not become ready")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None
            self.log.close()

    def __enter__(self) -> GatewayProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class LoadResult:
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    ttfts: list[float] = field(default_factory=list)
    errors: int = 0
    elapsed: float = 0.0
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def ok(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.ok / self.elapsed if self.elapsed else 0.0

    def pct(self, p: float, values: list[float] | None = None) -> float:
        data = sorted(self.latencies if values is None else values)
        if not data:
            return float("nan")
        return data[min(len(data) - 1, round(p / 100 * (len(data) - 1)))]


Request = Callable[[aiohttp.ClientSession, int], Awaitable[tuple[int, float | None]]]


async def closed_loop(request: Request, *, concurrency: int, total: int, warmup: int = 0,
                      connector_limit: int = 0, stagger: float = 0.0) -> LoadResult:
    """`concurrency` clients, each sending its next request when the previous one finished, until
    `total` requests have been sent (after `warmup` unmeasured ones). `request(session, i)` returns
    (status, ttft or None).

    `stagger` spreads the clients' first requests evenly over that many seconds. Against an upstream
    with a fixed latency, clients that all start together stay in lock-step for the whole run and
    the proxy sees bursts of `concurrency` requests at once, which no real traffic looks like;
    staggered by one upstream latency, their arrivals stay evenly spread."""
    result = LoadResult()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connector_limit or concurrency)) as session:
        counter = iter(range(warmup))

        async def worker(measure: bool, delay: float = 0.0) -> None:
            if delay:
                await asyncio.sleep(delay)
            for i in counter:
                start = time.perf_counter()
                try:
                    status, ttft = await request(session, i)
                except (TimeoutError, aiohttp.ClientError):
                    result.errors += 1
                    continue
                if not measure:
                    continue
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if status < 400:
                    result.latencies.append(time.perf_counter() - start)
                    if ttft is not None:
                        result.ttfts.append(ttft - start)
                else:
                    result.errors += 1

        if warmup:
            await asyncio.gather(*(worker(False) for _ in range(concurrency)))
        counter = iter(range(total))
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(True, stagger * k / concurrency) for k in range(concurrency)))
        result.elapsed = time.perf_counter() - t0
    return result


async def read_answer(resp: aiohttp.ClientResponse, stream: bool) -> float | None:
    """Read a whole answer; for a stream, the moment its first bytes arrived (the TTFT mark)."""
    if not stream:
        await resp.read()
        return None
    first = None
    async for _ in resp.content.iter_any():
        first = first or time.perf_counter()
    return first


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (robust on a shared, noisy machine)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f}"


def summary(name: str, r: LoadResult) -> str:
    return (f"{name:<28} n={r.ok:<6} err={r.errors:<4} p50={fmt_ms(r.pct(50))} ms  p99={fmt_ms(r.pct(99))} ms  "
            f"mean={fmt_ms(statistics.fmean(r.latencies) if r.latencies else float('nan'))} ms  {r.rate:8.1f} req/s")


def append_section(doc: Path, title: str, body: str) -> None:
    """Replace (or add) the `## title` section of a markdown file."""
    intro = "# Benchmarks\n\nMeasured on this machine; each figure is compared with a baseline from the same run.\n"
    text = doc.read_text() if doc.exists() else intro
    header = f"## {title}"
    start = text.find(header)
    block = f"{header}\n\n{body.strip()}\n"
    if start < 0:
        text = text.rstrip() + "\n\n" + block
    else:
        end = text.find("\n## ", start + len(header))
        text = text[:start] + block + (text[end + 1 :] if end >= 0 else "")
    doc.write_text(text)
