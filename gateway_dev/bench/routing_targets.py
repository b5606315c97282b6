"""What `bench routing` sends its requests through: ours with the `Router` driven directly, or the whole
gateway in a thread; the streaming client both use (and the peers, routing_peers.py)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import orjson


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
        decision = await router.decide(router.request(body, session_key(body)))
        replica = decision.replica
        router.begin(replica, decision.pending)
        pending = decision.pending

        def prefilled() -> None:  # the first bytes: the prefill there is over, as the gateway's relay says
            nonlocal pending
            router.done_prefill(replica, pending)
            pending = 0

        try:
            status, text, first = await _send(self.http, replica.base_url, body, out, on_first=prefilled)
        except aiohttp.ClientError as exc:
            _failed(exc)
            status, text, first = 599, "", 0.0
        router.end(replica, ok=status == 200, status=status, pending=pending)
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
        parts.providers.pool_serves = router.pool.serves
        parts.gateway.failover = router
        parts.pool = router.pool
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
