"""Routing requests for the vLLM pool: the `Router` and its pipeline stage.

Per request: `RouteStage.before` picks a replica (`Router.decide`), points the upstream call at it and
counts the decision; the upstream relay calls `Router.failover(ctx, status)` when the replica refused
the connection, answered 5xx or broke a stream before any byte reached the client, which moves the
request to another replica, and `Router.prefilled(ctx)` at a stream's first bytes (its prefill is over);
`RouteStage.after` closes the in-flight count and feeds passive health.

Several gateways route consistently because (1) session bindings live in the shared store and are
read before any scoring, and (2) everything else is deterministic from shared inputs (the request,
the replica list, rendezvous-hash tie-breaks). docs/routing.md explains the choice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from gateway.config import RoutingConfig
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.metrics import ROUTE_DECISIONS
from gateway.pipeline import Hit, Stage
from gateway.routing.kv_events import KVEventIndex, KVEventSubscriber
from gateway.routing.params import RoutingParams
from gateway.routing.policies import CacheAware, Policy, RouteRequest, make_policy
from gateway.routing.pool import Replica, ReplicaPool
from gateway.routing.sessions import SessionTable, session_key
from gateway.stores.base import KVStore

log = logging.getLogger("gateway.routing")


@dataclass(slots=True)
class Decision:
    replica: Replica
    reason: str
    session: str | None
    pending: int = 0  # predicted uncached prompt bytes it adds to the replica's prefill work
    request: RouteRequest | None = None


@dataclass(slots=True)
class RouteState:
    """What the route stage keeps in `ctx.scratch["route"]` for one request."""

    request: RouteRequest
    current: Replica | None
    tried: set[str] = field(default_factory=set)
    pending: int = 0


class Router:
    def __init__(self, pool: ReplicaPool, routing: RoutingConfig | None = None, store: KVStore | None = None,
                 *, policy: str | None = None, params: dict[str, Any] | RoutingParams | None = None) -> None:
        self.pool = pool
        routing = routing or pool.routing
        if isinstance(params, RoutingParams):
            self.params = params
        else:
            self.params = RoutingParams.parse(params if params is not None else routing.params)
        self.policy: Policy = make_policy(policy or routing.policy, self.params)
        self.sessions = SessionTable(store, pool.name, self.params.session_ttl, self.params.local_sessions)
        pool.on_reset(lambda r: self.policy.reset(r.name))
        pool.on_stats(lambda r, prev, stats: self.policy.observe(r.name, prev, stats))
        self.kv_events: KVEventIndex | None = None
        self._subscriber: KVEventSubscriber | None = None
        if isinstance(self.policy, CacheAware) and (self.params.kv_events_endpoints or self.params.kv_events_port):
            self.kv_events = KVEventIndex(self.params.kv_events_stale_s)
            self._subscriber = KVEventSubscriber(self.kv_events, self._event_endpoints)

    def _event_endpoints(self) -> dict[str, str]:
        explicit, port = self.params.kv_events_endpoints, self.params.kv_events_port
        out = {}
        for name, replica in self.pool.replicas.items():
            if name in explicit:
                out[name] = explicit[name]
            elif port is not None:
                host = urlsplit(replica.url).hostname or ""
                out[name] = f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"
        return out

    async def start(self) -> None:
        await self.pool.start()
        if self._subscriber is not None:
            await self._subscriber.start()

    async def stop(self) -> None:
        if self._subscriber is not None:
            await self._subscriber.stop()
        await self.sessions.drain()
        await self.pool.stop()

    async def _tokenize(self, req: RouteRequest, candidates: list[Replica]) -> list[int] | None:
        """The prompt's token ids from a replica's `/tokenize` (the model's own chat template), or None."""
        body = req.body
        payload: dict[str, Any]
        if isinstance(body.get("messages"), list):
            payload = {k: body[k] for k in ("messages", "tools", "chat_template_kwargs") if k in body}
        elif isinstance(body.get("prompt"), str):
            payload = {"prompt": body["prompt"]}
        else:
            return None
        payload["model"] = req.model
        try:
            async with self.pool.session.post(candidates[0].url + "/tokenize", json=payload,
                                              timeout=aiohttp.ClientTimeout(total=self.params.probe_timeout)) as r:
                if r.status != 200:
                    return None
                data = await r.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
            return None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        return [int(t) for t in tokens] if isinstance(tokens, list) else None

    # ---- decisions ----
    async def choose(self, body: dict[str, Any], session: str | None = None,
                     exclude: set[str] | frozenset[str] = frozenset()) -> Replica:
        """The replica for `body` (an OpenAI request as sent upstream). `session` is the caller's explicit
        session id, if any; `exclude` names replicas not to use. Raises GatewayError(503) when none can."""
        key = session_key(body, session)
        return (await self.decide(self.request(body, key), exclude)).replica

    def request(self, body: dict[str, Any], key: str | None) -> RouteRequest:
        model = body.get("model")
        model = model if isinstance(model, str) else ""
        return RouteRequest(model[len("vllm/"):] if model.startswith("vllm/") else model, body, key)

    async def decide(self, req: RouteRequest, exclude: set[str] | frozenset[str] = frozenset(),
                     reason: str | None = None, write_behind: bool = False) -> Decision:
        """`write_behind`: the session's binding reaches the store beside the upstream call rather than
        before it (the request path); the local copy has it at once either way."""
        candidates = self.pool.candidates(req.model, exclude)
        if not candidates:
            raise GatewayError(503, f"No healthy vLLM replica can serve `{req.model or 'this model'}` right now.")
        policy = self.policy
        bound_name: str | None = None
        bound: Replica | None = None
        if policy.sticky and self.params.session_affinity and req.session:
            bound_name = await self.sessions.get(req.session)
            bound = next((r for r in candidates if r.name == bound_name), None)
        if self.kv_events is not None:
            names = [r.name for r in candidates]
            # A session that stays on its replica is not scored: no tokenize call before its send.
            scored = not isinstance(policy, CacheAware) or policy.scores(candidates, bound)
            if scored and any(self.kv_events.fresh(n) for n in names):
                if req.tokens is None:
                    req.tokens = await self._tokenize(req, candidates)
                req.event_share = self.kv_events.shares(req.tokens, names) if req.tokens else None
            else:
                req.event_share = None
        replica, why = policy.select(req, candidates, bound)
        if reason is None and bound_name is not None and bound is None and replica.name != bound_name:
            reason = "failover"  # the session's replica is gone or excluded: the session moves
        policy.placed(req, replica)
        if self.kv_events is not None:
            self.kv_events.placed(replica.name)
        if policy.sticky and self.params.session_affinity and req.session:
            sessions = self.sessions
            if write_behind:
                if replica.name != bound_name:
                    sessions.bind_soon(req.session, replica.name)
                else:
                    sessions.touch_soon(req.session, replica.name)
            elif replica.name != bound_name:
                await sessions.bind(req.session, replica.name)
            else:
                await sessions.touch(req.session, replica.name)
        reason = reason or why
        ROUTE_DECISIONS.labels(self.pool.name, replica.name, reason).inc()
        return Decision(replica, reason, req.session, req.pending, req)

    # ---- in-flight accounting and passive health ----
    def begin(self, replica: Replica, pending: int = 0) -> None:
        replica.inflight += 1
        replica.pending_bytes += pending

    def end(self, replica: Replica, ok: bool, status: int | None = None, connect_error: bool = False,
            pending: int = 0, request: RouteRequest | None = None) -> None:
        if request is not None:
            self.policy.ended(request, replica)
        replica.inflight = max(0, replica.inflight - 1)
        replica.pending_bytes = max(0, replica.pending_bytes - pending)
        self.pool.record(replica, ok, status, connect_error)

    # ---- the pipeline's view ----
    async def route(self, ctx: RequestContext) -> Decision:
        """Pick a replica for `ctx` and point its upstream call there."""
        body = ctx.upstream_body or ctx.body
        key = session_key(body, ctx.session, scope=ctx.tenant)
        req = self.request(body, key)
        decision = await self.decide(req, write_behind=True)
        state = RouteState(req, None)
        ctx.scratch["route"] = state
        self._point(ctx, state, decision)
        return decision

    async def failover(self, ctx: RequestContext, status: int | None) -> bool:
        """The relay's retry hook: the current replica refused the connection (`status` None) or answered
        `status` ≥ 500 before any byte reached the client. Records the failure, then points `ctx` at
        another replica not yet tried; False when there is none (the relay then answers the error)."""
        state: RouteState | None = ctx.scratch.get("route")
        if state is None:
            return False
        failed = state.current
        if failed is not None:
            state.tried.add(failed.name)
            self.end(failed, ok=False, status=status, connect_error=status is None, pending=state.pending,
                     request=state.request)
            state.current = None
        try:
            decision = await self.decide(state.request, exclude=state.tried, reason="failover", write_behind=True)
        except GatewayError:
            return False
        log.info("vLLM request failed over", extra={
            "request_id": ctx.request_id, "from": failed.name if failed else None, "to": decision.replica.name,
            "status": status if status is not None else "connect"})
        self._point(ctx, state, decision)
        return True

    def prefilled(self, ctx: RequestContext) -> None:
        """The relay's hook: the current replica sent the first bytes of `ctx`'s stream, so its prefill is
        done and its predicted uncached bytes stop counting as work queued there (what remains is decode)."""
        state: RouteState | None = ctx.scratch.get("route")
        if state is not None and state.current is not None:
            self.done_prefill(state.current, state.pending, state.request)
            state.pending = 0

    def done_prefill(self, replica: Replica, pending: int, request: RouteRequest | None = None) -> None:
        if request is not None:
            self.policy.prefilled(request, replica)
        replica.pending_bytes = max(0, replica.pending_bytes - pending)

    def finish(self, ctx: RequestContext) -> None:
        """The request is over: close its in-flight count and record the outcome."""
        state: RouteState | None = ctx.scratch.get("route")
        if state is None or state.current is None:
            return
        replica, state.current = state.current, None
        self.end(replica, ok=ctx.status < 500, status=ctx.status, pending=state.pending, request=state.request)

    def _point(self, ctx: RequestContext, state: RouteState, decision: Decision) -> None:
        replica = decision.replica
        state.current = replica
        state.tried.add(replica.name)
        state.pending = decision.pending
        self.begin(replica, decision.pending)
        ctx.upstream_base_url = replica.base_url
        ctx.replica = replica.name
        ctx.record["replica"] = replica.name
        ctx.record["route_reason"] = decision.reason
        ctx.record["engine"] = replica.engine


class RouteStage(Stage):
    """Pipeline stage `route`: only requests resolved to the vLLM pool (`ctx.provider == "vllm"`)."""

    name = "route"
    light = True  # pass-through requests to the pool are routed too

    def __init__(self, router: Router) -> None:
        self.router = router

    async def before(self, ctx: RequestContext) -> Hit | None:
        if ctx.provider == "vllm":
            await self.router.route(ctx)
        return None

    async def after(self, ctx: RequestContext) -> None:
        self.router.finish(ctx)

    async def start(self) -> None:
        await self.router.start()

    async def stop(self) -> None:
        await self.router.stop()
