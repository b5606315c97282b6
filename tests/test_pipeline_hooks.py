"""Optional stage hooks: declared as Protocols, dispatched by the pipeline to the stages whose before() ran."""

from __future__ import annotations

from gateway.answer import Event, TextDelta
from gateway.context import RequestContext
from gateway.pipeline import EventHook, Hit, KeepsUpstream, OnAbandoned, OnUpstreamError, Pipeline, Stage
from gateway.protocols import get_adapter


class Hooked(Stage):
    name = "hooked"

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.abandoned = 0

    def listens(self, ctx: RequestContext) -> bool:
        return True

    def on_event(self, ctx: RequestContext, event: Event) -> None:
        self.events.append(event)

    def keeps_upstream(self, ctx: RequestContext) -> bool:
        return True

    def on_abandoned(self, ctx: RequestContext) -> None:
        self.abandoned += 1

    async def on_upstream_error(self, ctx: RequestContext, status: int, body: bytes) -> bool:
        return status == 404


class ShortCircuit(Stage):
    name = "short"

    async def before(self, ctx: RequestContext) -> Hit | None:
        return Hit(status="response-hit")


class Light(Stage):
    name = "light"
    light = True


def _ctx() -> RequestContext:
    return RequestContext("r", get_adapter("openai_chat"), {}, {}, {})


def test_hooks_are_declared_protocols() -> None:
    stage = Hooked()
    for hook in (EventHook, KeepsUpstream, OnAbandoned, OnUpstreamError):
        assert isinstance(stage, hook)
    assert not isinstance(Light(), EventHook)


async def test_hooks_reach_only_the_stages_that_ran() -> None:
    late = Hooked()
    early = Hooked()
    pipeline = Pipeline([early, ShortCircuit(), late, Light()])
    ctx = _ctx()
    assert await pipeline.before(ctx) is not None  # the short circuit: `late` never ran
    assert pipeline.listeners(ctx) == [early]
    assert pipeline.keeps_upstream(ctx)
    pipeline.abandoned(ctx)
    assert (early.abandoned, late.abandoned) == (1, 0)
    assert await pipeline.on_upstream_error(ctx, 404, b"") and not await pipeline.on_upstream_error(ctx, 500, b"")
    assert pipeline.repairs and not Pipeline([Light()]).repairs
    assert [s.name for s in pipeline.light().stages] == ["light"]
    early.on_event(ctx, TextDelta("x"))
    assert early.events == [TextDelta("x")]


async def test_nothing_ran_nothing_dispatched() -> None:
    stage = Hooked()
    pipeline = Pipeline([stage])
    ctx = _ctx()
    assert pipeline.listeners(ctx) == [] and not pipeline.keeps_upstream(ctx)
    pipeline.abandoned(ctx)
    assert stage.abandoned == 0
