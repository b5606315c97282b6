"""Stages and the runner that strings them together.

After authentication, policy and the protocol adapter (which may refuse a request), the layers run
as stages, in this order:

    usage → response cache → semantic cache → rewrite → prefix explainer → provider cache → route
    → [upstream]

`before()` runs in that order. A stage may return a `Hit` (a cached answer): the stages after it
and the upstream call are skipped. `after()` runs in reverse order, only for the stages whose
`before()` ran, once the answer is complete (or has failed): that is where the caches store and the
usage record is written, so "upstream → usage → store" reads bottom-up in the list above.

A stage's own failure is logged, counted and skipped, never returned to the caller (the layer
fails open). Only a `GatewayError` — a deliberate refusal such as "no replica can serve this" —
ends the request.

Beyond `before()`/`after()`, a stage may declare optional hooks, each a Protocol below, that the
pipeline dispatches to the stages whose `before()` ran: `on_event` (the upstream answer's events as
they arrive), `keeps_upstream` (other requests still wait on this one's upstream answer),
`on_abandoned` (the request ended without a complete answer), `on_upstream_error` (repair a request the
upstream refused), `beside`/`settle` (work its `before()` left to run beside the upstream call) and `purge`
(the admin purge of its layer).

A `before()` whose work is needed only for the response's headers or the record, not for the upstream
request itself, may leave it for later (`Beside`): the handler starts it (`beside()`) once the upstream
request is on its way, so it runs while the upstream prefills instead of delaying the send, and waits for
it (`settle()`) once the upstream's first bytes are in, before any header goes out, and on every error
path; the stage's own `after()` settles too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from gateway.answer import Answer, Event
from gateway.context import RequestContext
from gateway.errors import GatewayError

log = logging.getLogger("gateway.pipeline")

# (stage name, phase) -> None; the metrics module counts stage failures through it.
StageErrorHook = Callable[[str, str], None]


@dataclass(slots=True)
class Hit:
    """A short-circuit: the answer comes from a cache (or from another request's upstream call)."""

    status: str  # the x-gateway-cache value: "response-hit" | "semantic-hit" | "miss" (coalesced)
    answer: Answer | None = None  # a complete answer ...
    events: AsyncIterator[Event] | None = None  # ... or a live feed of one (single-flight fan-out)
    similarity: float | None = None


class Stage:
    """Base class of a layer. Override what the layer needs; the defaults do nothing."""

    name: ClassVar[str] = "stage"
    # Runs for the pass-through endpoints too (embeddings, token counts, cachedContents), which skip
    # the caching layers: usage recording and routing.
    light: ClassVar[bool] = False

    async def before(self, ctx: RequestContext) -> Hit | None:
        return None

    async def after(self, ctx: RequestContext) -> None:
        return None

    async def start(self) -> None:
        """Called once when the gateway starts (open connections, start background tasks)."""

    async def stop(self) -> None:
        """Called once on shutdown (flush buffers, close connections)."""


# ---- optional hooks ----------------------------------------------------------------------------


@runtime_checkable
class EventHook(Protocol):
    """Sees the upstream answer's neutral events as they arrive (a single-flight leader's followers get
    its stream live through it)."""

    def listens(self, ctx: RequestContext) -> bool:
        """True when `on_event` wants this request's events (asked once, when the answer starts)."""
        ...

    def on_event(self, ctx: RequestContext, event: Event) -> None: ...


@runtime_checkable
class KeepsUpstream(Protocol):
    """Says whether other requests still wait on this request's upstream answer: while one does, a
    stream whose own client left is read to the end for them instead of being cut."""

    def keeps_upstream(self, ctx: RequestContext) -> bool: ...


@runtime_checkable
class OnAbandoned(Protocol):
    """Called the moment a request ends without a complete answer, before its post-stages (which run
    later, in the background): a single-flight leader releases its followers then."""

    def on_abandoned(self, ctx: RequestContext) -> None: ...


@runtime_checkable
class OnUpstreamError(Protocol):
    async def on_upstream_error(self, ctx: RequestContext, status: int, body: bytes) -> bool:
        """An upstream error before any byte was relayed: True when the stage rewrote the request so
        that sending it again can succeed (a vendor cache the gateway made expired upstream)."""
        ...


@runtime_checkable
class Beside(Protocol):
    def beside(self, ctx: RequestContext) -> None:
        """Start what `before()` left to run beside `ctx`'s upstream call (a no-op when nothing is left)."""
        ...

    async def settle(self, ctx: RequestContext) -> None:
        """Wait for it (running it now when it was never started)."""
        ...


@runtime_checkable
class Purges(Protocol):
    async def purge(self, tenant: str, version: str | None = None) -> int:
        """Delete the tenant's entries of this layer (the admin purge); how many."""
        ...


class Pipeline:
    def __init__(self, stages: Sequence[Stage], on_stage_error: StageErrorHook | None = None) -> None:
        self.stages = list(stages)
        self._on_error = on_stage_error
        self._event_hooks = [s for s in self.stages if isinstance(s, EventHook)]
        self._keepers = [s for s in self.stages if isinstance(s, KeepsUpstream)]
        self._abandoned = [s for s in self.stages if isinstance(s, OnAbandoned)]
        self._repairers = [s for s in self.stages if isinstance(s, OnUpstreamError)]
        self._settlers = [s for s in self.stages if isinstance(s, Beside)]

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    def light(self) -> Pipeline:
        """The stages that run for the pass-through endpoints."""
        return Pipeline([s for s in self.stages if s.light], self._on_error)

    # ---- hook dispatch: to the stages whose before() ran -------------------------------------------
    def listeners(self, ctx: RequestContext) -> list[EventHook]:
        return [s for s in self._event_hooks if s in ctx.ran and s.listens(ctx)]

    def keeps_upstream(self, ctx: RequestContext) -> bool:
        return any(s.keeps_upstream(ctx) for s in self._keepers if s in ctx.ran)

    def abandoned(self, ctx: RequestContext) -> None:
        for stage in self._abandoned:
            if stage in ctx.ran:
                try:
                    stage.on_abandoned(ctx)
                except Exception as exc:  # never let a stage's hook fail the request's end
                    self._failed(stage, "abandoned", ctx, exc)

    async def on_upstream_error(self, ctx: RequestContext, status: int, body: bytes) -> bool:
        for stage in self._repairers:
            if stage in ctx.ran and await stage.on_upstream_error(ctx, status, body):
                return True
        return False

    def beside(self, ctx: RequestContext) -> None:
        """Start what the stages' `before()` left for later. Called right before the upstream request is
        sent; the start is a callback on the loop and the work a task it creates, so that task queues behind
        the HTTP client's own write of the request (a task created during the send): the bytes leave first."""
        stages: list[Stage] = [s for s in self._settlers if s in ctx.ran]
        if stages:
            asyncio.get_running_loop().call_soon(self._start, stages, ctx)

    def _start(self, stages: list[Stage], ctx: RequestContext) -> None:
        for stage in stages:
            try:
                stage.beside(ctx)  # type: ignore[attr-defined]  # one of _settlers: a Beside
            except Exception as exc:
                self._failed(stage, "before", ctx, exc)

    async def settle(self, ctx: RequestContext) -> None:
        """Wait for the work the stages' `before()` left to run beside the upstream call; a failure there
        is the stage's `before()` failing (logged, counted, skipped)."""
        for stage in self._settlers:
            if stage in ctx.ran:
                try:
                    await stage.settle(ctx)
                except Exception as exc:
                    self._failed(stage, "before", ctx, exc)

    @property
    def repairs(self) -> bool:
        return bool(self._repairers)

    # ---- the request path ----------------------------------------------------------------------------
    async def before(self, ctx: RequestContext) -> Hit | None:
        ran = ctx.ran
        for stage in self.stages:
            ran.append(stage)
            try:
                hit = await stage.before(ctx)
            except GatewayError:
                raise
            except Exception as exc:
                self._failed(stage, "before", ctx, exc)
                continue
            if hit is not None:
                return hit
        return None

    async def after(self, ctx: RequestContext) -> None:
        for stage in reversed(ctx.ran):
            try:
                await stage.after(ctx)
            except Exception as exc:
                self._failed(stage, "after", ctx, exc)

    async def start(self) -> None:
        for stage in self.stages:
            await stage.start()

    async def stop(self) -> None:
        for stage in reversed(self.stages):
            try:
                await stage.stop()
            except Exception as exc:
                log.exception("stage %s failed to stop: %s", stage.name, exc)

    def _failed(self, stage: Stage, phase: str, ctx: RequestContext, exc: BaseException) -> None:
        """Logged, counted, skipped: a layer fails open."""
        log.warning(
            "stage failed; skipped",
            extra={"stage": stage.name, "phase": phase, "request_id": ctx.request_id,
                   "error": f"{type(exc).__name__}: {exc}"},
            exc_info=exc if log.isEnabledFor(logging.DEBUG) else None,
        )
        if self._on_error is not None:
            self._on_error(stage.name, phase)
