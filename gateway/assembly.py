"""Builds the gateway from settings: policies, the shared store, the layers in their order, the
upstream clients and the vLLM pool. The one place that knows every layer; nothing else imports
them all."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter

from gateway.admin import admin_dependency
from gateway.cache.embeddings import EmbeddingsCache
from gateway.cache.stage import ResponseCacheStage
from gateway.cached_contents import CachedContentOwnership
from gateway.config import Settings
from gateway.handler import Gateway
from gateway.metrics import STAGE_ERRORS
from gateway.pipeline import Pipeline, Purges, Stage
from gateway.policy.registry import PolicyRegistry
from gateway.protocols.translate import preload as preload_translation
from gateway.provider_cache.explain import PrefixExplainStage
from gateway.provider_cache.stage import ProviderCacheStage
from gateway.providers import ProviderTable
from gateway.rewrite.stage import RewriteStage
from gateway.routing import ReplicaPool, Router, RouteStage
from gateway.semantic import SemanticCacheStage
from gateway.stores import open_store
from gateway.stores.base import KVStore
from gateway.upstream.client import UpstreamClients
from gateway.usage.api import usage_router
from gateway.usage.stage import UsageStage
from gateway.vendor_keys import warn_missing_keys

log = logging.getLogger("gateway")

Purger = Callable[[str, str | None], Awaitable[Any]]
# stage name → the layer name of the admin purge API
PURGE_LAYERS = {"response_cache": "response", "semantic_cache": "semantic", "provider_cache": "provider"}


@dataclass
class Components:
    settings: Settings
    registry: PolicyRegistry
    store: KVStore
    providers: ProviderTable
    pipeline: Pipeline
    clients: UpstreamClients
    gateway: Gateway
    pool: Any = None  # the vLLM replica pool (gateway.routing), None without endpoints
    extra_routers: list[APIRouter] = field(default_factory=list)
    purgers: dict[str, Purger] = field(default_factory=dict)
    background: list[Any] = field(default_factory=list)  # objects with start()/stop()
    started: bool = False
    _watch: asyncio.Task[None] | None = None
    _warm: asyncio.Task[None] | None = None
    _loading: list[Any] = field(default_factory=list)

    async def start(self) -> None:
        warn_missing_keys(self.settings, self.registry.current)
        # Warm what the first translated request would otherwise load on the event loop.
        await asyncio.to_thread(preload_translation)
        for part in self.background:
            await part.start()
        await self.pipeline.start()
        # Layers that load on demand (the semantic cache's embedder) start loading now if a tenant
        # uses them; the gateway is ready once they are (`ready`), and serves /readyz meanwhile.
        self._loading = [t for t in self._prepare() if t is not None]
        self._watch = asyncio.get_running_loop().create_task(self._watch_policies())
        self.started = True
        if self._loading:
            self._warm = asyncio.get_running_loop().create_task(self._settle())
        else:
            self._freeze()

    def _prepare(self) -> list[Any]:
        return [prepare(self.registry.current) for stage in self.pipeline.stages
                if (prepare := getattr(stage, "prepare", None)) is not None]

    async def _settle(self) -> None:
        await asyncio.gather(*self._loading, return_exceptions=True)
        self._loading = []
        self._freeze()

    @staticmethod
    def _freeze() -> None:
        # Everything loaded so far (the cost map, tokenizers, the embedder, policies) lives as long
        # as the process: freezing it keeps the collector from walking those millions of objects
        # in every full collection, which showed up as 100-400 ms pauses at the p99.
        gc.collect()
        gc.freeze()

    @property
    def ready(self) -> bool:
        """Started, policies loaded, and every layer a tenant used at start-up loaded. A layer a policy
        reload enables later loads while the gateway stays ready (its requests skip that layer)."""
        return self.started and self.registry.current is not None and not self._loading

    def layer_states(self) -> dict[str, str]:
        """Each layer's state: "ready", or what a lazily loaded layer says ("off", "loading", …)."""
        # A stage's readiness word is its `readiness`, else its `state`; a method of that name (a stage's
        # per-request state) is not one
        words = {}
        for stage in self.pipeline.stages:
            word = getattr(stage, "readiness", None) or getattr(stage, "state", "ready")
            words[stage.name] = word if isinstance(word, str) else "ready"
        return words

    async def _watch_policies(self) -> None:
        while True:
            await asyncio.sleep(self.settings.policy_check_interval)
            try:
                result = await self.registry.areload_if_changed()
                if result is not None and result.changed:
                    self._prepare()  # a tenant may have enabled a lazily loaded layer
            except Exception:  # a bad read is retried next time; the serving set stays
                log.exception("policy check failed")

    async def stop(self) -> None:
        self.started = False
        if self._watch is not None:
            self._watch.cancel()
        if self._warm is not None:
            self._warm.cancel()
        await self.gateway.drain()
        await self.pipeline.stop()
        for part in reversed(self.background):
            await part.stop()
        await self.clients.close()
        await self.store.close()


class _SignerLifecycle:
    """A signer with background work (the Vertex token refresh) as a start/stop part of the components."""

    def __init__(self, signer: Any) -> None:
        self.signer = signer

    async def start(self) -> None:
        await self.signer.start()

    async def stop(self) -> None:
        await self.signer.close()


def build_components(settings: Settings, *, registry: PolicyRegistry | None = None,
                     store: KVStore | None = None, stages: list[Stage] | None = None) -> Components:
    registry = registry or PolicyRegistry(settings.policies)
    store = store or open_store(settings)
    clients = UpstreamClients(settings)
    providers = ProviderTable(settings)
    layers = Layers(settings, store, clients, providers)
    pipeline = Pipeline(stages if stages is not None else layers.stages(),
                        on_stage_error=lambda stage, phase: STAGE_ERRORS.labels(stage, phase).inc())
    gateway = Gateway(settings, registry, providers, pipeline, clients)
    gateway.ownership = CachedContentOwnership(store)
    gateway.request_checks.append(gateway.ownership.check_reference)
    if pipeline.stage("response_cache") is not None:
        gateway.embeddings = EmbeddingsCache(store)
    parts = Components(settings=settings, registry=registry, store=store, providers=providers, pipeline=pipeline,
                       clients=clients, gateway=gateway)
    route = pipeline.stage("route")
    if isinstance(route, RouteStage):
        # The pool answers which models it serves; the router retries on another replica while no
        # byte has reached the client.
        providers.pool_serves = route.router.pool.serves
        gateway.failover = route.router
        gateway.pool_models = route.router.pool.models
        parts.pool = route.router.pool
    vertex = providers.get("vertex_ai")
    if settings.vertex_project and vertex is not None:
        # The Vertex token is minted at start and kept fresh in the background; the provider-cache purge
        # deletes the tenant's Vertex caches with it.
        parts.background.append(_SignerLifecycle(vertex.signer))
        provider_cache = pipeline.stage("provider_cache")
        if provider_cache is not None and hasattr(provider_cache, "vertex_token"):
            provider_cache.vertex_token = vertex.signer.token  # type: ignore[attr-defined]
    for stage in pipeline.stages:
        layer = PURGE_LAYERS.get(stage.name)
        if layer is not None and isinstance(stage, Purges):
            parts.purgers[layer] = stage.purge
    usage = pipeline.stage("usage")
    if isinstance(usage, UsageStage):
        parts.extra_routers.append(usage_router(
            lambda: parts.store, admin_dependency(settings),
            admin_key=lambda: settings.admin_key.get_secret_value() if settings.admin_key else None,
            stage=lambda: usage))
    return parts


class Layers:
    """The layers in their order. Each is built from settings and the shared parts only."""

    def __init__(self, settings: Settings, store: KVStore, clients: UpstreamClients, providers: ProviderTable) -> None:
        self.settings, self.store, self.clients, self.providers = settings, store, clients, providers

    def stages(self) -> list[Stage]:
        usage = UsageStage(self.settings, self.store)
        return [
            usage,
            ResponseCacheStage(self.store, idle_timeout=self.settings.read_timeout),
            SemanticCacheStage(self.settings, lazy=True),
            RewriteStage(),
            PrefixExplainStage(self.settings, self.store, prices=usage.prices),
            ProviderCacheStage(self.settings, self.store, clients=self.clients, prices=usage.prices),
            *self.route(),
        ]

    def route(self) -> list[Stage]:
        if not self.settings.vllm_endpoints:
            return []
        return [RouteStage(Router(ReplicaPool.from_settings(self.settings), self.settings.routing, self.store))]
