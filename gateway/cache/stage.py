"""The exact response cache as a pipeline stage.

before(): decide whether the layer applies (`bypass` when the tenant, route or model has it off, on
`Cache-Control: no-store`, or when a replay could not reproduce the reply), compute the key, look
the entry up (a hit short-circuits the request), and on a miss join the single-flight: the first
request leads (goes upstream), identical requests follow it (`Hit(status="miss")` with the leader's
live events or its answer). `Cache-Control: no-cache` skips the lookup and the flight but still stores.

after(): store the leader's answer when it is complete, successful, produced by the upstream call
this request made, and storable by policy; then wake the followers and release the lock. Store
failures are logged, counted and otherwise ignored (fail-open).
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from gateway.answer import Answer, Event, Finish, Start
from gateway.cache import entry as entries
from gateway.cache.directives import AgeLimits, age_limits
from gateway.cache.key import cache_key, entry_key, keep_fast_key, lock_key
from gateway.cache.purge import purge
from gateway.cache.singleflight import Flight, LeaderFailed, LocalFlights, ReplicaLock, wait_for_remote
from gateway.cache.stale import Stale, serve_stale
from gateway.context import RequestContext
from gateway.keys import unreplayable
from gateway.metrics import CACHE_LOOKUPS, Children
from gateway.pipeline import Hit, Stage
from gateway.policy.models import ResponseCachePolicy
from gateway.stores.base import KVStore, StoreUnavailable

log = logging.getLogger("gateway.cache")

LAYER = "response"
_LOOKUPS = Children(CACHE_LOOKUPS)  # by (layer, result): no labels() call per lookup
# Finish reasons of a complete answer worth replaying. `length` only with `cache_truncated`;
# `content_filter` and anything unknown are never stored (they may not repeat).
STORABLE_FINISH = frozenset({"stop", "tool_calls"})
_GENERATION_ENDPOINTS = frozenset({"chat", "responses", "messages", "generate", "converse"})


@dataclass(eq=False)
class _State:
    digest: str
    entry_key: str
    may_store: bool = True
    flight: Flight | None = None
    finalizer: weakref.finalize | None = None
    lock: ReplicaLock | None = None
    limits: AgeLimits = field(default_factory=AgeLimits)
    stale_window: float = 0.0  # how long past its freshness an entry may still answer a failed call
    stale: Stale | None = None  # an expired entry found on lookup, kept in case the vendor fails


class ResponseCacheStage(Stage):
    name = "response_cache"

    def __init__(self, store: KVStore, *, lock_ttl: float = 10.0, max_wait: float = 60.0,
                 idle_timeout: float = 600.0, follower_retries: int = 2) -> None:
        """`store`: from `gateway.stores.open_store(settings)`. `lock_ttl`: cross-replica lock
        lifetime (kept alive while the leader runs). `max_wait`: longest a replica waits for another
        replica's leader before calling upstream itself. `idle_timeout`: longest a follower waits
        without news from its leader (use settings.read_timeout). `follower_retries`: how often a
        follower whose leader failed tries again (joining or leading a new flight) before it goes
        upstream on its own."""
        self.store = store
        self.flights = LocalFlights()
        self.lock_ttl = lock_ttl
        self.max_wait = max_wait
        self.idle_timeout = idle_timeout
        self.follower_retries = follower_retries
        self._last_warning = 0.0
        self._tasks: set[asyncio.Task[None]] = set()

    # ---- before -------------------------------------------------------------------------------
    async def before(self, ctx: RequestContext) -> Hit | None:
        policy = ctx.policy.response_cache if ctx.policy is not None else None
        reason = skip_reason(ctx, policy)
        if reason is not None or policy is None:
            ctx.cache_status = "bypass"
            ctx.record["response_cache_skip"] = reason
            _LOOKUPS[LAYER, "skip"].inc()
            return None
        digest = cache_key(ctx, user_scope=policy.scope == "user")
        state = _State(digest, entry_key(ctx.tenant, digest),
                       limits=age_limits(ctx.headers.get("cache-control", ""), shared=policy.scope == "tenant"))
        window = policy.stale_if_error or 0.0
        if state.limits.stale_if_error is not None:
            window = min(window, state.limits.stale_if_error)
        state.stale_window = window
        ctx.scratch[self.name] = state
        if ctx.no_cache:  # fresh answer wanted: no lookup, no flight, still stored
            ctx.cache_status = "bypass"
            ctx.record["response_cache_skip"] = "no-cache"
            _LOOKUPS[LAYER, "skip"].inc()
            return None

        ctx.cache_status = "miss"  # looked up: a miss unless the entry is found
        try:
            blob = await self.store.get(state.entry_key)
        except StoreUnavailable as exc:
            _LOOKUPS[LAYER, "error"].inc()
            self._warn("response cache lookup failed; treated as a miss", ctx, exc)
            blob = None
        else:
            _LOOKUPS[LAYER, "hit" if blob is not None else "miss"].inc()
        answer = await self._read(state, blob, ctx.tenant)
        if answer is not None:
            state.may_store = False
            keep_fast_key(ctx, policy.scope == "user", digest)
            return _hit(ctx, "response-hit", answer)
        return await self._coalesce(ctx, state)

    async def _coalesce(self, ctx: RequestContext, state: _State) -> Hit | None:
        for _ in range(self.follower_retries + 1):
            flight, leader = self.flights.join(state.entry_key)
            if leader:
                try:
                    return await self._lead(ctx, state, flight)
                except BaseException:
                    # Cancelled while waiting on another replica (the client left), or a bug: the
                    # followers must not wait for an answer this request will never fetch.
                    self._abandon(state)
                    raise
            state.may_store = False
            if ctx.stream:
                outcome = await flight.first(self.idle_timeout)
                if outcome == "events":
                    return Hit(status="miss", events=self._follow(ctx, flight))
                answer = flight.answer if outcome == "answer" else None
            else:
                answer = await flight.result(self.idle_timeout)
            if answer is not None:
                return _hit(ctx, "miss", answer, coalesced=True)
            state.may_store = True  # the leader failed: try again, as a follower or the leader
        return None  # go upstream alone

    async def _lead(self, ctx: RequestContext, state: _State, flight: Flight) -> Hit | None:
        state.flight = flight
        state.finalizer = self.flights.watch(ctx, flight)
        if not self.store.shared:
            return None  # one process: the in-process flight is all the single-flight there is
        lock = ReplicaLock(self.store, lock_key(ctx.tenant, state.digest), self.lock_ttl)
        deadline = time.monotonic() + self.max_wait
        while True:
            # Another replica may have stored it between our lookup and our lock: read just after locking.
            won, found = await lock.acquire_and_read(state.entry_key, alive=lambda: not flight.done)
            if won is None:  # store unavailable: lead without the cross-replica lock
                return None
            if won:
                state.lock = lock
                answer = await self._read(state, found, ctx.tenant)
                if answer is None:
                    return None  # go upstream; after() stores, wakes followers, unlocks
                await self._settle(state, answer)
                return _hit(ctx, "response-hit", answer)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            blob = await wait_for_remote(self.store, state.entry_key, lock.key, remaining)
            answer = await self._read(state, blob, ctx.tenant)
            if answer is not None:
                await self._settle(state, answer)
                return _hit(ctx, "miss", answer, coalesced=True)
            # The other replica's lock went away without an entry (or the wait ran out): retry.

    async def _settle(self, state: _State, answer: Answer) -> None:
        """The leader found the answer without going upstream: hand it to its followers now
        rather than after its own response is written."""
        state.may_store = False
        await self._release(state, answer)

    async def _release(self, state: _State, answer: Answer | None) -> None:
        if state.flight is not None:
            self.flights.finish(state.flight, answer)
            if state.finalizer is not None:
                state.finalizer.detach()
            state.flight = state.finalizer = None
        if state.lock is not None:
            lock, state.lock = state.lock, None
            await lock.release()

    # ---- hooks the pipeline dispatches (gateway/pipeline.py): a leader's flight -------------------
    def _flight(self, ctx: RequestContext) -> Flight | None:
        state: _State | None = ctx.scratch.get(self.name)
        return state.flight if state is not None else None

    def listens(self, ctx: RequestContext) -> bool:
        return self._flight(ctx) is not None

    def on_event(self, ctx: RequestContext, event: Event) -> None:
        """The leader's upstream events, live, to its followers."""
        flight = self._flight(ctx)
        if flight is not None:
            flight.publish(event)

    def keeps_upstream(self, ctx: RequestContext) -> bool:
        """Followers still wait on this leader's upstream answer."""
        flight = self._flight(ctx)
        return flight is not None and flight.followers > 0 and not flight.done

    def on_abandoned(self, ctx: RequestContext) -> None:
        """The leader ended without an answer: release its followers now, not after the post-stages."""
        state: _State | None = ctx.scratch.get(self.name)
        if state is not None:
            self._abandon(state)

    def _abandon(self, state: _State) -> None:
        """Release without awaiting (usable while being cancelled)."""
        if state.flight is not None:
            self.flights.finish(state.flight, None)
            if state.finalizer is not None:
                state.finalizer.detach()
            state.flight = state.finalizer = None
        if state.lock is not None:
            lock, state.lock = state.lock, None
            task = asyncio.get_running_loop().create_task(lock.release())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _follow(self, ctx: RequestContext, flight: Flight) -> AsyncIterator[Event]:
        saved: dict[str, Any] = {"layer": LAYER, "coalesced": True, "usage_raw": {},
                                 "provider": ctx.provider, "model": ctx.model}
        ctx.record["saved_from"] = saved
        try:
            async for event in flight.subscribe(self.idle_timeout):
                if isinstance(event, Start) and event.model:
                    saved["model"] = event.model
                elif isinstance(event, Finish):
                    saved["usage_raw"] = event.usage_raw
                yield event
        except LeaderFailed as exc:
            # The feed ends without a Finish: the handler tells the client in its protocol's
            # in-stream error shape (and nothing is stored or counted as saved).
            log.info("single-flight leader failed mid-stream", extra={"request_id": ctx.request_id,
                                                                      "error": str(exc)})
            ctx.record.pop("saved_from", None)

    async def _read(self, state: _State, blob: bytes | None, tenant: str) -> Answer | None:
        """The entry's answer when it is fresh for this request; an expired one within the stale
        window is kept on `state.stale` instead."""
        if blob is None:
            return None
        try:
            answer, stored_at, ttl = entries.decode_entry(blob, tenant, state.digest)
        except entries.BadEntry as exc:
            log.warning("unreadable response-cache entry dropped", extra={"error": str(exc)})
            try:
                await self.store.delete(state.entry_key)
            except StoreUnavailable:
                pass
            return None
        age = max(0.0, time.time() - stored_at)
        fresh_for = ttl if ttl is not None else float("inf")
        if state.limits.max_age is not None:
            fresh_for = min(fresh_for, state.limits.max_age)
        if age <= fresh_for:
            return answer
        if state.stale_window > 0 and age - fresh_for <= state.stale_window:
            state.stale = Stale(answer, age)
        return None

    async def stale_answer(self, ctx: RequestContext, status: int) -> Hit | None:
        """The vendor failed with `status`: the expired entry found on lookup, if the window allows."""
        state: _State | None = ctx.scratch.get(self.name)
        if state is None or state.stale is None:
            return None
        state.may_store = False
        answer = serve_stale(ctx, state.stale, status)
        _LOOKUPS[LAYER, "stale"].inc()
        return _hit(ctx, "response-hit", answer)

    # ---- after --------------------------------------------------------------------------------
    async def after(self, ctx: RequestContext) -> None:
        state: _State | None = ctx.scratch.get(self.name)
        if state is None:
            return
        answer = ctx.answer
        try:
            if state.may_store and answer is not None and ctx.answered_by == "upstream" and ctx.policy is not None:
                policy = ctx.policy.response_cache
                fresh = policy.ttl if state.limits.max_age is None else min(policy.ttl, state.limits.max_age)
                if storable(answer, policy) and fresh > 0:
                    await self._store(ctx, state, answer, fresh, fresh + (policy.stale_if_error or 0.0))
        finally:
            await self._release(state, answer)

    async def _store(self, ctx: RequestContext, state: _State, answer: Answer, fresh: float, keep: float) -> None:
        blob = entries.encode(answer, ctx.tenant, state.digest, ttl=fresh)
        lock, state.lock = state.lock, None
        try:
            if lock is not None:  # the entry, then the lock's release (one round trip)
                await lock.release_after_set(state.entry_key, blob, keep)
            else:
                await self.store.set(state.entry_key, blob, ttl=keep)
        except StoreUnavailable as exc:
            self._warn("response cache write failed; answer not stored", ctx, exc)

    async def purge(self, tenant: str, version: str | None = None) -> int:
        """Remove every response-cache entry of `tenant`; the number removed. (`version` belongs to
        the semantic layer; it is accepted so every layer's purge has the admin API's signature.)"""
        return await purge(self.store, tenant)

    async def stop(self) -> None:
        # The store is shared (usage and other layers flush to it after this stage stops): whoever
        # opened it closes it. Lock releases still under way get a moment to finish.
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=1.0)

    def _warn(self, message: str, ctx: RequestContext, exc: Exception) -> None:
        # Once every few seconds at most: during an outage every request would log the same line.
        now = time.monotonic()
        if now - self._last_warning >= 5.0:
            self._last_warning = now
            log.warning(message, extra={"request_id": ctx.request_id, "tenant": ctx.tenant, "error": str(exc)})


def skip_reason(ctx: RequestContext, policy: ResponseCachePolicy | None) -> str | None:
    """Why the layer does not apply to this request (the x-gateway-cache is then `bypass`)."""
    if policy is None or not policy.enabled:
        return "disabled"
    if ctx.no_store:
        return "no-store"
    if ctx.endpoint not in _GENERATION_ENDPOINTS:
        return "endpoint"
    if policy.routes and ctx.endpoint not in policy.routes:
        return "route"
    if policy.models and not any(fnmatch.fnmatchcase(ctx.model, p) for p in policy.models):
        return "model"
    if any(fnmatch.fnmatchcase(ctx.model, p) for p in policy.exclude_models):
        return "model"
    if policy.scope == "user" and not ctx.user:
        return "no user"  # user scope without a user: no safe scope, so no caching
    return unreplayable(ctx)


def storable(answer: Answer, policy: ResponseCachePolicy) -> bool:
    if answer.finish_reason in STORABLE_FINISH:
        return True
    return answer.finish_reason == "length" and policy.cache_truncated


def _hit(ctx: RequestContext, status: str, answer: Answer, coalesced: bool = False) -> Hit:
    ctx.cache_status = status
    saved: dict[str, Any] = {"layer": LAYER, "usage_raw": answer.usage_raw, "provider": answer.provider,
                             "model": answer.model}
    if coalesced:
        saved["coalesced"] = True
    ctx.record["saved_from"] = saved
    return Hit(status=status, answer=answer)


__all__ = ["ResponseCacheStage", "purge", "skip_reason", "storable"]
