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
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from gateway.answer import Answer, Event
from gateway.context import RequestContext
from gateway.errors import GatewayError

log = logging.getLogger("gateway.pipeline")

# The handler calls every callable in ctx.scratch[EVENT_TAPS] with each neutral event it parses from
# the upstream answer, as it arrives: that is how single-flight followers get a leader's stream live.
EVENT_TAPS = "event_taps"
# Callables in ctx.scratch[UPSTREAM_WANTED] say whether other requests still wait on this one's upstream
# answer (a single-flight leader's followers). While one says yes, a stream whose own client left is
# read to the end for them instead of being cut (and their streams with it).
UPSTREAM_WANTED = "upstream_wanted"
# Callables in ctx.scratch[UPSTREAM_FAILED] run the moment a request ends without a complete answer
# (before its post-stages, which run later in the background): a single-flight leader releases its
# followers then, so none joins a flight whose leader is already gone.
UPSTREAM_FAILED = "upstream_failed"

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

    async def before(self, ctx: RequestContext) -> Hit | None:
        return None

    async def after(self, ctx: RequestContext) -> None:
        return None

    async def start(self) -> None:
        """Called once when the gateway starts (open connections, start background tasks)."""

    async def stop(self) -> None:
        """Called once on shutdown (flush buffers, close connections)."""


class Pipeline:
    def __init__(self, stages: Sequence[Stage], on_stage_error: StageErrorHook | None = None) -> None:
        self.stages = list(stages)
        self._on_error = on_stage_error

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    async def before(self, ctx: RequestContext) -> Hit | None:
        ran: list[Stage] = ctx.scratch.setdefault("_ran", [])
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
        ran: list[Stage] = ctx.scratch.get("_ran", [])
        for stage in reversed(ran):
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
        log.warning(
            "stage failed; skipped",
            extra={"stage": stage.name, "phase": phase, "request_id": ctx.request_id,
                   "error": f"{type(exc).__name__}: {exc}"},
            exc_info=exc if log.isEnabledFor(logging.DEBUG) else None,
        )
        if self._on_error is not None:
            self._on_error(stage.name, phase)
