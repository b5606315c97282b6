"""The semantic layer's life cycle: loading (at start or lazily, off the event loop), the store's
opening and reopening, purges and shutdown. A mixin of `gateway.semantic.stage.SemanticCacheStage`,
which holds the state these methods use; the request path is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from gateway.config import Settings
from gateway.context import RequestContext
from gateway.semantic.checks import OffLoopChecks
from gateway.semantic.embedder import Embedder
from gateway.semantic.guard import warm_up
from gateway.semantic.lean_import import release_freed_memory
from gateway.semantic.options import SemanticOptions
from gateway.semantic.store import VectorStore, collection_name

log = logging.getLogger("gateway.semantic")

_REOPEN_EVERY = 5.0  # seconds between attempts to open a store that was down at start


def open_vector_store(settings: Settings, embedder_name: str, dim: int) -> VectorStore:
    """qdrant-client for `GATEWAY_QDRANT_URL` (a server, or `:memory:`), else qdrant-edge under the data dir."""
    name = collection_name(embedder_name, dim)
    timeout = max(float(settings.store_timeout), 0.05)
    if settings.qdrant_url:
        from gateway.semantic.client import ClientStore

        local = settings.qdrant_url == ":memory:" or settings.qdrant_url.startswith("path:")
        # local mode scans in Python (tests only): give it time; a server gets the store timeout
        return ClientStore(settings.qdrant_url, name, dim, timeout=2.0 if local else timeout)
    from gateway.semantic.edge import EdgeStore

    # the thread hop plus a WAL write can take a few ms on a busy machine; a search takes < 1 ms
    return EdgeStore(settings.data_dir / "qdrant-edge", name, dim, timeout=max(timeout, 0.5))


class LayerLifecycle:
    """Start, load, open, purge and stop; the attributes are set by the stage's constructor."""

    settings: Settings
    options: SemanticOptions
    embedder: Embedder
    store: VectorStore | None
    checks: OffLoopChecks
    clock: Callable[[], float]
    lazy: bool
    _open: bool
    _last_open_try: float
    _tasks: set[asyncio.Task[Any]]
    _purger: asyncio.Task[None] | None
    _load: asyncio.Task[None] | None
    _loaded: bool
    _failed: str | None
    _last_warning: float

    def _warn(self, message: str, exc: BaseException, ctx: RequestContext | None = None) -> None:
        now = time.monotonic()
        if now - self._last_warning >= 5.0:  # an outage would log the same line on every request
            self._last_warning = now
            extra: dict[str, Any] = {"error": f"{type(exc).__name__}: {exc}"}
            if ctx is not None:
                extra.update(request_id=ctx.request_id, tenant=ctx.tenant)
            log.warning(message, extra=extra)

    async def start(self) -> None:
        if not self.lazy:
            await self._load_all()

    @property
    def state(self) -> str:
        """"off" (nothing loaded: no tenant has enabled the layer), "loading", "ready" or "failed: …"."""
        if self._failed is not None:
            return f"failed: {self._failed}"
        if self._loaded:
            return "ready"
        return "loading" if self._load is not None else "off"

    def prepare(self, policies: Any) -> asyncio.Task[None] | None:
        """Start loading in the background when a tenant of `policies` (a PolicySet) enables the layer:
        the loading task (None when nothing needs loading)."""
        wanted = any(p.semantic_cache.enabled for p in getattr(policies, "policies", {}).values())
        return self._begin_load() if wanted else None

    def _begin_load(self) -> asyncio.Task[None] | None:
        if self._loaded or self._failed is not None:
            return None
        if self._load is None:
            self._load = asyncio.create_task(self._load_all(), name="semantic-load")
        return self._load

    async def _load_all(self) -> None:
        """The embedder in its worker thread, the guard's resources in a thread, then the store."""
        started = time.monotonic()
        try:
            await self.embedder.start()
        except Exception as exc:  # no model, no layer: requests still go through (fail-open)
            log.error("semantic cache: embedder failed to load; the layer is off", extra={"error": str(exc)})
            self._failed = f"embedder did not load ({str(exc)[:200]})"
            return
        try:
            # load the guard's word lists and the pinyin table now, not on the first request
            await asyncio.get_running_loop().run_in_executor(None, warm_up)
            await self.checks.load_all()  # parsers and the paraphrase model, before the first lookup
            await asyncio.get_running_loop().run_in_executor(None, release_freed_memory)
            if self.store is None:
                self.store = open_vector_store(self.settings, self.embedder.name, self.embedder.dim)
        except Exception as exc:
            if not self.lazy:
                raise
            # loading in the background: nobody awaits this task, so the layer says what happened
            log.error("semantic cache: failed to load; the layer is off", extra={"error": repr(exc)})
            self._failed = f"{type(exc).__name__}"
            return
        await self._ensure_open()
        self._purger = asyncio.create_task(self._purge_loop(), name="semantic-purge")
        self._loaded = True
        if self.lazy:
            log.info("semantic cache loaded", extra={"seconds": round(time.monotonic() - started, 2),
                                                     "embedder": self.embedder.name})

    async def _ensure_open(self) -> bool:
        if self._open:
            return True
        if self.store is None:
            return False
        now = time.monotonic()
        if self._last_open_try and now - self._last_open_try < _REOPEN_EVERY:
            return False
        self._last_open_try = now
        try:
            await self.store.open()
        except Exception as exc:
            self._warn("semantic cache: vector store unavailable; lookups miss until it is back", exc)
            return False
        self._open = True
        return True

    async def stop(self) -> None:
        if self._load is not None and not self._load.done():
            self._load.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._load
        if self._purger is not None:
            self._purger.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._purger
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        if self.store is not None:
            await self.store.close()
        await self.checks.batch.close()
        await self.embedder.close()

    async def _purge_loop(self) -> None:
        while True:
            await asyncio.sleep(self.options.purge_interval)
            await self.purge_expired()

    async def purge_expired(self) -> int:
        if not await self._ensure_open() or self.store is None:
            return 0
        try:
            return await self.store.purge_expired(self.clock())
        except Exception as exc:
            self._warn("semantic cache: purge of expired entries failed", exc)
            return 0

    async def purge(self, tenant: str, version: str | None = None) -> int:
        """Admin API: remove a tenant's entries (of one knowledge version, or all)."""
        if self.store is None and self.lazy and self.embedder.dim:  # entries of an earlier run, layer not loaded
            self.store = open_vector_store(self.settings, self.embedder.name, self.embedder.dim)
        if not await self._ensure_open() or self.store is None:
            raise RuntimeError("the semantic cache store is unavailable")
        return await self.store.purge(tenant, version)
