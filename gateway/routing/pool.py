"""The vLLM replica pool: who is in it, what each serves, whether it is healthy, how loaded it is.

Members come from `GATEWAY_VLLM_ENDPOINTS` / `vllm_endpoints` in the config file. An entry is either a
server root (`http://10.0.0.5:8000`) or a DNS name whose every A/AAAA record is a replica:
`dns+http://vllm-headless.llm.svc.cluster.local:8000` — a Kubernetes headless Service, re-resolved every
`routing.dns_interval` so pods that come and go join and leave (routing to pod IPs, never through a
ClusterIP, is what keeps stickiness meaningful).

Background tasks (started by `start()`):
- every `routing.health_interval`: `GET /health` on each replica (and `GET /v1/models` when a replica
  has no models yet or comes back); `unhealthy_after` failures in a row mark it down;
- every `routing.metrics_interval`: `GET /metrics` → running/waiting requests, KV usage, prefix-cache
  counters (→ `gateway_vllm_prefix_cache_hit_rate{pool}`) and the KV capacity;
- every `routing.dns_interval`: re-resolve the DNS entries.
Passive health (`record()`, fed by the router after each request): a connect error ejects a replica
at once, `eject_after_5xx` 5xx in a row eject it; an ejected replica comes back once its ejection time
has passed and `/health` answers 200.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aiohttp

from gateway.config import RoutingConfig, Settings
from gateway.metrics import PREFIX_HIT_RATE
from gateway.routing.params import RoutingParams
from gateway.routing.scrape import ReplicaStats, parse_metrics

log = logging.getLogger("gateway.routing")

DNS_SCHEMES = ("dns+http://", "dns+https://")


@dataclass(eq=False)
class Replica:
    url: str  # server root: /v1/..., /health and /metrics live under it
    name: str = ""  # host:port, the `replica` label and the shared session-binding value
    models: set[str] = field(default_factory=set)
    healthy: bool = True  # active checks (optimistic until the first one)
    ejected: bool = False  # passive ejection
    ejected_until: float = 0.0
    ejections: int = 0  # consecutive ejections (doubles the next one)
    fail_streak: int = 0  # consecutive 5xx answers
    check_failures: int = 0  # consecutive failed /health checks
    inflight: int = 0  # this gateway's requests on it now
    pending_bytes: int = 0  # their predicted uncached prompt bytes: the prefill work this gateway put there
    foreign: float = 0.0  # requests from elsewhere (other gateways) at the last scrape
    kv_usage: float = 0.0
    stats: ReplicaStats | None = None
    dynamic: bool = False  # came from a DNS entry
    engine: str = "vllm"  # "vllm" | "sglang", from the metric names its /metrics page uses

    def __post_init__(self) -> None:
        if not self.name:
            self.name = urlsplit(self.url).netloc

    @property
    def available(self) -> bool:
        return self.healthy and not self.ejected

    @property
    def load(self) -> float:
        return self.inflight + self.foreign

    @property
    def base_url(self) -> str:
        """As the OpenAI SDK takes it: the upstream path (`/chat/completions`) goes below it."""
        return self.url + "/v1"


def normalize_root(url: str) -> str:
    url = url.strip().rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class ReplicaPool:
    def __init__(
        self,
        endpoints: list[str],
        *,
        name: str = "vllm",
        routing: RoutingConfig | None = None,
        params: RoutingParams | None = None,
        session: aiohttp.ClientSession | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.routing = routing or RoutingConfig()
        self.params = params or RoutingParams.parse(self.routing.params)
        self._session = session
        self._own_session = session is None
        self._clock = clock
        self.replicas: dict[str, Replica] = {}
        self._dns: list[tuple[str, str, int]] = []  # (scheme, host, port)
        for entry in endpoints:
            entry = entry.strip()
            if not entry:
                continue
            if entry.startswith(DNS_SCHEMES):
                scheme = entry[len("dns+"):].split("://", 1)[0]
                parts = urlsplit(entry[len("dns+"):])
                if not parts.hostname:
                    raise ValueError(f"vLLM endpoint {entry!r}: no host name")
                self._dns.append((scheme, parts.hostname, parts.port or (443 if scheme == "https" else 80)))
            else:
                replica = Replica(normalize_root(entry))
                if not urlsplit(replica.url).hostname:
                    raise ValueError(f"vLLM endpoint {entry!r} is not a URL (http://host:port)")
                self.replicas[replica.name] = replica
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._reset_hooks: list[Callable[[Replica], None]] = []
        self._stats_hooks: list[Callable[[Replica, ReplicaStats | None, ReplicaStats], None]] = []
        self._window: deque[tuple[float, float, float]] = deque()  # (time, Δhits, Δqueries)

    @classmethod
    def from_settings(cls, settings: Settings, session: aiohttp.ClientSession | None = None) -> ReplicaPool:
        return cls(settings.vllm_endpoints, routing=settings.routing, session=session)

    # ---- hooks (the router's prefix index follows the replicas' caches through them) ----
    def on_reset(self, hook: Callable[[Replica], None]) -> None:
        """`hook(replica)` when a replica's KV cache is presumed lost (down, ejected, restarted, removed)."""
        self._reset_hooks.append(hook)

    def on_stats(self, hook: Callable[[Replica, ReplicaStats | None, ReplicaStats], None]) -> None:
        """`hook(replica, previous stats, new stats)` after each scrape of a replica."""
        self._stats_hooks.append(hook)

    def _reset(self, replica: Replica) -> None:
        for hook in self._reset_hooks:
            hook(replica)

    # ---- queries ----
    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, limit_per_host=64),
                                                  cookie_jar=aiohttp.DummyCookieJar())  # shared by all tenants
            self._own_session = True
        return self._session

    def serves(self, model: str) -> bool:
        """Whether a replica (healthy or not: a down pool answers 503, not 404) lists `model`."""
        name = model[len("vllm/"):] if model.startswith("vllm/") else model
        return any(name in r.models for r in self.replicas.values())

    def models(self) -> set[str]:
        """Every model name some replica lists (for the gateway's own `/v1/models`)."""
        return set().union(*(r.models for r in self.replicas.values()))

    def candidates(self, model: str, exclude: set[str] | frozenset[str] = frozenset()) -> list[Replica]:
        """Available replicas serving `model`, in name order (so every gateway sees the same list).
        Replicas whose model list is still unknown count as serving it. When passive health has ejected
        every one that is still up, those are returned anyway (Envoy's "panic mode"): a burst of errors
        must not turn into a full outage before the health checks have had their say."""
        name = model[len("vllm/"):] if model.startswith("vllm/") else model
        eligible = sorted(
            (r for r in self.replicas.values()
             if r.healthy and r.name not in exclude and (not r.models or not name or name in r.models)),
            key=lambda r: r.name,
        )
        available = [r for r in eligible if not r.ejected]
        return available or eligible

    # ---- passive health ----
    def record(self, replica: Replica, ok: bool, status: int | None = None, connect_error: bool = False) -> None:
        """The outcome of one request on `replica`."""
        if connect_error:
            self.eject(replica, "connect error")
        elif status is not None and status >= 500:
            replica.fail_streak += 1
            if replica.fail_streak >= self.params.eject_after_5xx:
                self.eject(replica, f"{replica.fail_streak} answers {status}")
        elif ok:
            replica.fail_streak = 0
            replica.ejections = 0

    def eject(self, replica: Replica, why: str) -> None:
        if replica.ejected:
            return
        p = self.params
        replica.ejected = True
        replica.ejected_until = self._clock() + min(p.eject_max_s, p.eject_base_s * 2 ** min(replica.ejections, 10))
        replica.ejections += 1
        replica.fail_streak = 0
        log.warning("vLLM replica ejected", extra={"pool": self.name, "replica": replica.name, "why": why})
        self._reset(replica)

    # ---- lifecycle ----
    async def start(self) -> None:
        if self._started:  # already running (started by the route stage and by the app, say)
            return
        self._started = True
        await self.refresh()
        self._tasks = [
            asyncio.create_task(self._loop(self._check_all, self.routing.health_interval), name="vllm-health"),
            asyncio.create_task(self._loop(self._scrape_all, self.routing.metrics_interval), name="vllm-metrics"),
        ]
        if self._dns:
            self._tasks.append(asyncio.create_task(self._loop(self._resolve, self.routing.dns_interval),
                                                   name="vllm-dns"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        self._started = False
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None

    async def refresh(self) -> None:
        """One round of everything the background tasks do (start-up, tests)."""
        if self._dns:
            await self._resolve()
        await self._check_all()
        await self._scrape_all()

    async def _loop(self, step: Callable[[], object], interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await step()  # type: ignore[misc]
            except Exception as exc:  # a probe round must never kill the task
                log.warning("vLLM pool task failed", extra={"pool": self.name, "error": repr(exc)})

    # ---- DNS ----
    async def _resolve(self) -> None:
        loop = asyncio.get_running_loop()
        seen: set[str] = set()
        for scheme, host, port in self._dns:
            try:
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                # Keep the members we have: a DNS hiccup must not empty the pool.
                log.warning("vLLM DNS lookup failed", extra={"pool": self.name, "host": host, "error": repr(exc)})
                seen.update(r.name for r in self.replicas.values() if r.dynamic)
                continue
            for family, *_rest, sockaddr in infos:
                ip = str(sockaddr[0])
                url = f"{scheme}://[{ip}]:{port}" if family == socket.AF_INET6 else f"{scheme}://{ip}:{port}"
                replica = Replica(url, dynamic=True)
                seen.add(replica.name)
                if replica.name not in self.replicas:
                    self.replicas[replica.name] = replica
                    log.info("vLLM replica joined", extra={"pool": self.name, "replica": replica.name})
        for name in [n for n, r in self.replicas.items() if r.dynamic and n not in seen]:
            gone = self.replicas.pop(name)
            log.info("vLLM replica left", extra={"pool": self.name, "replica": name})
            self._reset(gone)

    # ---- active health and models ----
    async def _check_all(self) -> None:
        await asyncio.gather(*(self._check(r) for r in list(self.replicas.values())))

    async def _check(self, replica: Replica) -> None:
        ok = await self._get_ok(replica, "/health")
        if not ok:
            replica.check_failures += 1
            if replica.healthy and replica.check_failures >= self.params.unhealthy_after:
                replica.healthy = False
                log.warning("vLLM replica down", extra={"pool": self.name, "replica": replica.name})
                self._reset(replica)
            return
        replica.check_failures = 0
        returning = not replica.healthy or replica.ejected
        if replica.ejected and self._clock() >= replica.ejected_until:
            replica.ejected = False
        if not replica.healthy:
            replica.healthy = True
        if returning and replica.available:
            log.info("vLLM replica re-admitted", extra={"pool": self.name, "replica": replica.name})
        if not replica.models or (returning and replica.available):
            await self._models(replica)

    async def _get_ok(self, replica: Replica, path: str) -> bool:
        try:
            async with self.session.get(replica.url + path, timeout=self._timeout()) as resp:
                await resp.read()
                return resp.status == 200
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False

    async def _models(self, replica: Replica) -> None:
        try:
            async with self.session.get(replica.url + "/v1/models", timeout=self._timeout()) as resp:
                if resp.status != 200:
                    return
                data = await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
            return
        items = data.get("data") if isinstance(data, dict) else None
        if isinstance(items, list):
            replica.models = {str(m["id"]) for m in items if isinstance(m, dict) and m.get("id")}

    def _timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=self.params.probe_timeout)

    # ---- metrics ----
    async def _scrape_all(self) -> None:
        replicas = [r for r in self.replicas.values() if r.healthy]
        await asyncio.gather(*(self._scrape(r) for r in replicas))
        self._publish_hit_rate()

    async def _scrape(self, replica: Replica) -> None:
        try:
            async with self.session.get(replica.url + "/metrics", timeout=self._timeout()) as resp:
                if resp.status != 200:
                    return
                text = await resp.text()
        except (aiohttp.ClientError, TimeoutError, OSError, UnicodeDecodeError):
            return
        stats = parse_metrics(text)
        prev = replica.stats
        replica.stats = stats
        # Requests the replica runs or queues that this gateway did not send: other gateways' load.
        replica.foreign = max(0.0, stats.running + stats.waiting - replica.inflight)
        replica.kv_usage = stats.kv_usage or 0.0
        replica.engine = stats.engine
        restarted = prev is not None and prev.queries is not None and (stats.queries or 0) < prev.queries
        if restarted:  # a counter went back: the replica restarted, its cache is empty
            self._reset(replica)
        for hook in self._stats_hooks:
            hook(replica, None if restarted else prev, stats)
        if stats.queries is None or stats.hits is None:
            return
        if prev is not None and prev.queries is not None and prev.hits is not None:
            if restarted:
                dq, dh = stats.queries, stats.hits
            else:
                dq, dh = stats.queries - prev.queries, stats.hits - prev.hits
            if dq > 0:
                self._window.append((self._clock(), dh, dq))

    def _publish_hit_rate(self) -> None:
        horizon = self._clock() - self.params.hit_rate_window
        while self._window and self._window[0][0] < horizon:
            self._window.popleft()
        queries = sum(q for _, _, q in self._window)
        if queries > 0:
            PREFIX_HIT_RATE.labels(self.name).set(sum(h for _, h, _ in self._window) / queries)
