"""`/_emulator/*`: control a running emulator over HTTP (the subprocess variant, where a test or benchmark
cannot reach the objects): state and call counts, the clock, faults, latency, resets. Not a vendor path."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.latency import parse_latency
from gateway_dev.emulators.web import EmulatorState

if TYPE_CHECKING:
    from gateway_dev.emulators.vllm_app import VLLMReplica


def _json(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


def admin_routes(state: EmulatorState, faults: Callable[[], dict[str, FaultController]],
                 replica: VLLMReplica | None = None, on_reset: Callable[[], None] | None = None) -> list[Route]:
    async def body_of(request: Request) -> dict[str, Any]:
        raw = await request.body()
        return orjson.loads(raw) if raw else {}

    async def get_state(request: Request) -> Response:
        out: dict[str, Any] = {"clock": state.clock.now(), "counts": dict(state.log.counts),
                               "latency": state.latency.as_dict(), "output_tokens": state.output_tokens}
        if replica is not None:
            out["kv"] = {"queries": replica.kv.queries, "hits": replica.kv.hits, "usage": replica.kv.usage,
                         "evictions": replica.kv.evictions, "running": replica.running,
                         "waiting": len(replica.waiting)}
        return _json(out)

    async def clock(request: Request) -> Response:
        body = await body_of(request)
        if "set" in body:
            state.clock.set(float(body["set"]))
        if "advance" in body:
            state.clock.advance(float(body["advance"]))
        return _json({"clock": state.clock.now()})

    async def set_faults(request: Request) -> Response:
        body = await body_of(request)
        controllers = faults()
        if body.get("clear"):
            for c in controllers.values():
                c.clear()
            return _json({"cleared": sorted(controllers)})
        name = body.get("emulator") or next(iter(controllers))
        if name not in controllers:
            return _json({"error": f"unknown emulator {name!r}; known: {sorted(controllers)}"}, 400)
        try:
            if body.get("always"):
                controllers[name].set_always(body["fault"])
            else:
                controllers[name].inject(body["fault"], int(body.get("count", 1)))
        except (ValueError, KeyError) as e:
            return _json({"error": str(e)}, 400)
        return _json({"emulator": name, "pending": controllers[name].pending})

    async def latency(request: Request) -> Response:
        body = await body_of(request)
        try:
            if "spec" in body:
                parse_latency(str(body["spec"]), base=state.latency)
            else:
                state.latency.set(**{k: float(v) for k, v in body.items()})
        except ValueError as e:
            return _json({"error": str(e)}, 400)
        return _json(state.latency.as_dict())

    async def reset(request: Request) -> Response:
        body = await body_of(request)
        state.log.reset()
        if body.get("cache"):
            if replica is not None:
                replica.reset()
            if on_reset is not None:
                on_reset()
        return _json({"reset": True})

    return [
        Route("/_emulator/state", get_state, methods=["GET"]),
        Route("/_emulator/clock", clock, methods=["POST"]),
        Route("/_emulator/faults", set_faults, methods=["POST"]),
        Route("/_emulator/latency", latency, methods=["POST"]),
        Route("/_emulator/reset", reset, methods=["POST"]),
    ]
