"""What `bench routing` sends its requests through: ours as its own `serve` process (the default), the whole
gateway in a thread of the benchmark, or the `Router` driven directly; the streaming client all use (and the
peers, routing_peers.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml


async def _send(http: aiohttp.ClientSession, base: str, body: dict[str, Any], out: int,
                headers: dict[str, str] | None = None, on_first: Any = None) -> tuple[int, str, float]:
    """Stream one chat completion; (status, text, perf_counter() at the first content token)."""
    first, parts = 0.0, []
    async with http.post(base + "/chat/completions", data=orjson.dumps(body), headers={
            "content-type": "application/json", "x-emulator-output-tokens": str(out), **(headers or {})}) as resp:
        if resp.status != 200:
            await resp.read()
            return resp.status, "", 0.0
        async for line in resp.content:
            if on_first is not None:
                on_first()
                on_first = None
            if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
                continue
            chunk = orjson.loads(line[6:])
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    first = first or time.perf_counter()
                    parts.append(piece)
    return 200, "".join(parts), first


def default_layers() -> str:
    """The layers a tenant with the default policy runs (the benchmark's tenant sets only its key)."""
    from gateway.policy.models import TenantPolicy

    policy = TenantPolicy.model_construct()  # the defaults, as the benchmark's policy file leaves them
    on = ["usage records", "prefix-break explainer"]
    if policy.response_cache.enabled:
        on.insert(1, "response cache (looked up, answers stored)")
    off = [name for name, enabled in (("semantic cache", policy.semantic_cache.enabled),
                                      ("prompt rewrite", policy.prompt_rewrite.enabled)) if not enabled]
    return ", ".join(on) + (f" ({' and '.join(off)} off by default)" if off else "")


_MODEL = "Qwen/Qwen3-8B"  # the model the replicas serve (as in routing.py)
_CLIENT_ERRORS: Counter[str] = Counter()


def _failed(exc: BaseException) -> None:
    _CLIENT_ERRORS[f"{type(exc).__name__}: {exc}"[:120]] += 1


class DirectTarget:
    """The router in this process; each request streamed straight to the chosen replica."""

    def __init__(self, http: aiohttp.ClientSession, urls: list[str], routing: Any) -> None:
        from gateway.routing.pool import ReplicaPool
        from gateway.routing.router import Router
        from gateway.stores.memory import MemoryStore

        self.http = http
        self.router = Router(ReplicaPool(urls, routing=routing, session=http), store=MemoryStore())

    async def start(self) -> None:
        await self.router.start()

    async def stop(self) -> None:
        await self.router.stop()

    async def call(self, body: dict[str, Any], out: int) -> tuple[int, str, float]:
        from gateway.routing.sessions import session_key

        router = self.router
        req = router.request(body, session_key(body))
        decision = await router.decide(req)
        replica = decision.replica
        router.begin(replica, decision.pending)
        pending = decision.pending

        def prefilled() -> None:  # the first bytes: the prefill there is over, as the gateway's relay says
            nonlocal pending
            router.done_prefill(replica, pending, req)
            pending = 0

        try:
            status, text, first = await _send(self.http, replica.base_url, body, out, on_first=prefilled)
        except aiohttp.ClientError as exc:
            _failed(exc)
            status, text, first = 599, "", 0.0
        router.end(replica, ok=status == 200, status=status, pending=pending, request=req)
        return status, text, first


class GatewayTarget:
    """The whole gateway (route stage only, wired as the app wires it) on a loopback port in a thread."""

    KEY = "bench-routing-key"

    def __init__(self, http: aiohttp.ClientSession, urls: list[str], routing: Any, folder: Path) -> None:
        self.http, self.urls, self.routing, self.folder = http, urls, routing, folder

    def _start(self) -> None:
        from gateway.app import create_app
        from gateway.assembly import build_components
        from gateway.config import Settings
        from gateway.routing import ReplicaPool, Router, RouteStage
        from gateway.stores import open_store
        from gateway_dev.localrun import UvicornThread, write_policies

        write_policies(self.folder / "policies", {"bench": {"key": self.KEY}})
        settings = Settings.load(env={}, policies=self.folder / "policies", data_dir=self.folder / "data",
                                 vllm_endpoints=self.urls, routing=self.routing)
        store = open_store(settings)
        router = Router(ReplicaPool.from_settings(settings), settings.routing, store)
        parts = build_components(settings, store=store, stages=[RouteStage(router)])
        self.server = UvicornThread(create_app(settings, parts)).start()

    async def start(self) -> None:
        await asyncio.to_thread(self._start)

    async def stop(self) -> None:
        await asyncio.to_thread(self.server.stop)

    async def call(self, body: dict[str, Any], out: int) -> tuple[int, str, float]:
        try:
            return await _send(self.http, self.server.url + "/v1", body, out,
                               {"authorization": f"Bearer {self.KEY}"})
        except aiohttp.ClientError as exc:
            _failed(exc)
            return 599, "", 0.0


class GatewayProcess:
    """The gateway as users run it, `llm-cache-gateway serve` in its own process (as each peer router is),
    so the benchmark's clients and the gateway do not share one interpreter. The route decisions come from
    its own /metrics."""

    KEY = GatewayTarget.KEY

    def __init__(self, http: aiohttp.ClientSession, urls: list[str], routing: Any, folder: Path) -> None:
        self.http, self.urls, self.routing, self.folder = http, urls, routing, folder
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self, timeout: float = 60.0) -> None:
        from gateway_dev.localrun import free_port, write_policies

        self.folder.mkdir(parents=True, exist_ok=True)
        policies = write_policies(self.folder / "policies", {"bench": {"key": self.KEY}})
        config = self.folder / "gateway.yaml"
        config.write_text(yaml.safe_dump({"vllm_endpoints": self.urls, "data_dir": str(self.folder / "data"),
                                          "routing": self.routing.model_dump(mode="json")}))
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
        self.log = (self.folder / "gateway.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--policies", str(policies), "--config", str(config), "--log-level", "warning"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        body = orjson.dumps({"model": "Qwen/Qwen3-8B", "max_tokens": 1,
                             "messages": [{"role": "user", "content": "ready?"}]})
        while True:  # ready when a request goes through (the pool learns its replicas' models first)
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self._kill()
                raise RuntimeError("the gateway did not start: "
                                   + (self.folder / "gateway.log").read_text(errors="replace")[-2000:])
            req = urllib.request.Request(self.url + "/v1/chat/completions", data=body, headers={
                "content-type": "application/json", "authorization": f"Bearer {self.KEY}"})
            try:
                with urllib.request.urlopen(req, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None
        self.log.close()

    async def start(self) -> None:
        await asyncio.to_thread(self._start)

    async def stop(self) -> None:
        await asyncio.to_thread(self._kill)

    async def decisions(self) -> Counter[str]:
        """Route decisions so far by reason (`gateway_route_decisions_total` on its /metrics)."""
        from prometheus_client.parser import text_string_to_metric_families

        async with self.http.get(self.url + "/metrics") as resp:
            text = await resp.text()
        lines = "\n".join(line for line in text.splitlines() if line.startswith("gateway_route_decisions_total"))
        out: Counter[str] = Counter()
        for family in text_string_to_metric_families(lines + "\n"):
            for sample in family.samples:
                out[sample.labels["reason"]] += int(sample.value)
        return out

    async def call(self, body: dict[str, Any], out: int) -> tuple[int, str, float]:
        try:
            return await _send(self.http, self.url + "/v1", body, out, {"authorization": f"Bearer {self.KEY}"})
        except aiohttp.ClientError as exc:
            _failed(exc)
            return 599, "", 0.0


# ---- replicas -----------------------------------------------------------------------------------------
class Replicas:
    """Two emulator subprocesses (`python -m gateway_dev.emulators`): `n` replicas with limited KV, and one
    replica with unlimited KV for the upper bound."""

    def __init__(self, n: int, kv_blocks: int, max_num_seqs: int, latency: str, shared_prefill: bool = True) -> None:
        from gateway_dev.emulators.process import EmulatorProcess

        shared = ["--shared-prefill", "--kv-events"] if shared_prefill else ["--kv-events"]
        self.limited = EmulatorProcess(vllm_replicas=n, latency=latency, extra_args=[
            "--kv-capacity-blocks", str(kv_blocks), "--max-num-seqs", str(max_num_seqs), "--model", _MODEL, *shared])
        self.unlimited = EmulatorProcess(vllm_replicas=1, latency=latency, extra_args=[
            "--kv-capacity-blocks", str(4_000_000), "--max-num-seqs", "4096", "--model", _MODEL])

    def start(self) -> None:
        self.limited.start()
        self.unlimited.start()
        self.urls = self.limited.vllm_urls
        self.events = self.limited.kv_events_endpoints
        self.bound_url = self.unlimited.vllm_urls[0]

    def stop(self) -> None:
        self.limited.stop()
        self.unlimited.stop()
