"""Routing policies: pick one replica among the available candidates for a request.

`cache_aware` (the default) is the one to use; `round_robin`, `least_loaded` and `consistent_hash`
exist to compare against (bench routing) and for fleets without prefix reuse. docs/routing.md has the
algorithm, its defaults and how it compares to SGLang, llm-d, Dynamo and production-stack.

Every tie is broken by rendezvous hashing (highest random weight) of the session key, never by
chance or arrival order, so gateways that see the same inputs make the same choice.
"""

from __future__ import annotations

import hashlib
import itertools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gateway.routing.params import RoutingParams
from gateway.routing.pool import Replica
from gateway.routing.prefix_index import PrefixIndex, chunk_keys, render
from gateway.routing.scrape import ReplicaStats


@dataclass(slots=True)
class RouteRequest:
    model: str
    body: dict[str, Any]
    session: str | None  # affinity key (sessions.session_key); None only for an empty body
    _keys: list[bytes] | None = field(default=None, repr=False)
    size: int = 0  # bytes of the rendered request (known once `keys()` ran)
    # Matched share of the prompt per replica from KV events (kv_events.py), for replicas whose stream is
    # live; the others are scored by the prediction.
    event_share: dict[str, float] | None = None
    tokens: list[int] | None = None  # the prompt's token ids as a replica's /tokenize gave them (event mode)
    pending: int = 0  # predicted uncached bytes on the chosen replica (set by cache_aware)
    ticket: int = 0  # its entry among the requests still prefilling there (set by cache_aware)

    def keys(self, params: RoutingParams) -> list[bytes]:
        """The request's chained chunk keys (computed once)."""
        if self._keys is None:
            data = render(self.body)
            self.size = len(data)
            self._keys = chunk_keys(data, self.model, params.chunk_bytes, params.max_chunks)
        return self._keys


def rendezvous(key: str, replica: str) -> int:
    """Highest-random-weight score of `replica` for `key`: the same in every process."""
    return int.from_bytes(hashlib.blake2b(f"{key}\x00{replica}".encode(), digest_size=8).digest(), "big")


def hrw_order(key: str, candidates: list[Replica]) -> list[Replica]:
    return sorted(candidates, key=lambda r: rendezvous(key, r.name), reverse=True)


class Policy(ABC):
    name: ClassVar[str]
    sticky: ClassVar[bool] = False  # honours session bindings (SessionTable)

    def __init__(self, params: RoutingParams) -> None:
        self.params = params

    @abstractmethod
    def select(self, req: RouteRequest, candidates: list[Replica], bound: Replica | None) -> tuple[Replica, str]:
        """(chosen replica, reason). `candidates` is non-empty and sorted by name; `bound` is the
        session's replica when it is among them."""

    def placed(self, req: RouteRequest, replica: Replica) -> None:
        """The request was sent to `replica` (learning hook)."""
        return None

    def prefilled(self, req: RouteRequest, replica: Replica) -> None:
        """`req`'s prefill on `replica` is over (its first bytes came back)."""
        return None

    def ended(self, req: RouteRequest, replica: Replica) -> None:
        """`req` is no longer in flight on `replica` (it ended or failed)."""
        return None

    def reset(self, replica: str) -> None:
        """`replica`'s cache is gone."""
        return None

    def observe(self, replica: str, prev: ReplicaStats | None, stats: ReplicaStats) -> None:
        """A scrape of `replica` (prev: the one before, None after a restart)."""
        return None


class RoundRobin(Policy):
    name = "round_robin"

    def __init__(self, params: RoutingParams) -> None:
        super().__init__(params)
        self._counter = itertools.count()

    def select(self, req: RouteRequest, candidates: list[Replica], bound: Replica | None) -> tuple[Replica, str]:
        return candidates[next(self._counter) % len(candidates)], "round_robin"


class LeastLoaded(Policy):
    name = "least_loaded"

    def __init__(self, params: RoutingParams) -> None:
        super().__init__(params)
        self._counter = itertools.count()

    def select(self, req: RouteRequest, candidates: list[Replica], bound: Replica | None) -> tuple[Replica, str]:
        low = min(r.load for r in candidates)
        ties = [r for r in candidates if r.load == low]
        return ties[next(self._counter) % len(ties)], "least_loaded"


class ConsistentHash(Policy):
    """Rendezvous hashing of the session key: a session always lands on the same live replica and only
    the sessions of a replica that leaves move. No load bound (production-stack's `session` routing)."""

    name = "consistent_hash"

    def select(self, req: RouteRequest, candidates: list[Replica], bound: Replica | None) -> tuple[Replica, str]:
        return hrw_order(req.session or "", candidates)[0], "hash"


class CacheAware(Policy):
    """Session affinity, then the cheapest replica by (uncached prompt share + load), under a load guard.

    1. Load guard: a replica is overloaded when load − min load ≥ `balance_abs` AND
       load ≥ `balance_rel` × min load — SGLang's two conditions, per replica (load = this gateway's
       in-flight requests + the running/waiting requests of other gateways seen in the last scrape).
       Overloaded replicas take nothing new, not even their own sessions.
    2. A session bound to a replica that is not overloaded goes there (reason `session`).
    3. Otherwise each replica that is not overloaded costs
           (1 − matched share of the prompt) + w_load × (load − min load) / (mean load + 1)
                                             + w_kv × (KV usage − min KV usage)
       — the prefill it would have to do, as a share of the prompt, plus how much busier it is than the
       idlest replica — and the cheapest wins: `prefix` when its match covers ≥ `cache_threshold` of the
       prompt, else `least_loaded`. A prefix cached on only some replicas (a system prompt every request
       shares) stops attracting new sessions once those replicas are busier than the others, so the
       common prefix spreads instead of piling sessions onto its first replica.
    Ties: lower load, lower KV usage, a less filled index, then rendezvous hash of the session key.
    `load_guard` is the reason whenever the guard overruled the session's replica or the best prefix.
    The chosen replica's index then gets the request's chunk keys (speculatively, as llm-d does).
    """

    name = "cache_aware"
    sticky = True

    def __init__(self, params: RoutingParams) -> None:
        super().__init__(params)
        self.index = PrefixIndex(params.index_capacity or params.default_index_capacity)
        self.bytes_per_token = params.bytes_per_token
        self._kv_tokens: dict[str, int] = {}
        self._sent: dict[str, int] = {}  # rendered bytes routed to each replica since its tokens last moved
        self._bytes = 0.0  # calibration sample: bytes sent ...
        self._tokens = 0.0  # ... and the prompt tokens the replicas counted for them
        # Requests in flight on each replica: ticket -> [chunk keys, predicted uncached bytes not yet
        # prefilled, the byte offset where those start], so a request can tell its own prefix group's load
        # there from everyone else's, and the part of it that is the prefix it would reuse.
        self._inflight: dict[str, dict[int, list[Any]]] = {}
        self._tickets = itertools.count(1)
        # Session requests and new sessions seen (halved now and then: recent traffic counts most): their
        # ratio is the turns an average session brings, what a new session's load term is weighed by.
        self._session_requests = 0.0
        self._new_sessions = 0.0

    def turns(self) -> float:
        """Requests an average session brings (1 until sessions come back for more turns)."""
        p = self.params
        if not p.expected_turns or not p.session_affinity or self._new_sessions <= 0:
            return 1.0
        return min(p.expected_turns_max, max(1.0, self._session_requests / self._new_sessions))

    def _count(self, req: RouteRequest, bound: Replica | None) -> None:
        if not req.session:
            return
        self._session_requests += 1
        if bound is None:
            self._new_sessions += 1
        if self._new_sessions >= 2_000:
            self._session_requests, self._new_sessions = self._session_requests / 2, self._new_sessions / 2

    def group(self, replica: str, keys: list[bytes], matched: int) -> tuple[int, int, int]:
        """The requests in flight on `replica` that share the first `matched` chunks of `keys` (the prefix this
        request would reuse there): (how many, the bytes they still have to prefill, those bytes less the part
        that is this shared prefix itself). A member still prefilling the prefix computes what this request
        will reuse: it holds this one up by at most what prefilling the prefix again on another replica would
        take, and going there would copy the prefix. What the members prefill beyond it (their own questions,
        a session's new tool result, another new session's task) is queued work like any other's."""
        key, n, pending, overlap = keys[matched - 1], 0, 0, 0
        shared = matched * self.params.chunk_bytes
        for other, left, start in self._inflight.get(replica, {}).values():
            if len(other) >= matched and other[matched - 1] == key:
                n, pending = n + 1, pending + left
                if left:  # its uncached bytes run from `start` on: the part of them before `shared` is ours too
                    overlap += max(0, min(left, shared - start))
        return n, pending, pending - overlap

    def scores(self, candidates: list[Replica], bound: Replica | None) -> bool:
        """False when `select` will answer the session's replica without scoring (so the KV events' shares,
        which cost a tokenize call, are not needed)."""
        return bound is None or bound.name in self.overloaded(candidates)

    def overloaded(self, candidates: list[Replica]) -> set[str]:
        p = self.params
        low = min(r.load for r in candidates)
        return {r.name for r in candidates
                if r.load - low >= max(p.balance_abs, 1e-9) and r.load >= p.balance_rel * low}

    def select(self, req: RouteRequest, candidates: list[Replica], bound: Replica | None) -> tuple[Replica, str]:
        p = self.params
        self._count(req, bound)
        over = self.overloaded(candidates)
        if bound is not None and bound.name not in over:
            return bound, "session"
        keys = req.keys(p)
        total = len(keys)
        matched = self.index.match(keys, (r.name for r in candidates)) if total else {}
        shares = {r.name: matched.get(r.name, 0) / total if total else 0.0 for r in candidates}
        if req.event_share:
            for name, share in req.event_share.items():
                m = matched.get(name, 0)
                # A request in flight there that carries this prefix holds its blocks, or soon will: an engine
                # reports blocks stored only once they are computed (the emulator at admission), so a group's
                # next request, sent while its first still queues or prefills, would see them nowhere and
                # split the group. Ended requests leave the events the last word (an eviction, a flush).
                if share < shares[name] and m and self.group(name, keys, m)[0]:
                    continue
                shares[name] = share
        # A prefix group is kept whole on its replica until its own load there demands a second one. Other
        # groups' requests there are no reason to split it (new groups go where the load and the queued
        # prefill are least, so theirs spreads by itself): for a request that is no session's next turn the
        # load guard skips such a replica unless the group alone has `balance_abs` requests in flight there;
        # and while the group has one request in flight there, or no more than an average replica's whole
        # load, only the group's own requests count in the load this request joins, and only what they prefill
        # beyond the shared prefix in the queue (their prefill of the prefix is what this request will reuse).
        # Once the group alone keeps the replica busier than an average one, no placement of other work can
        # bring it back: then the replica's whole load and all its members' prefill count, and the group
        # grows — onto the replica that already holds its blocks, which the prediction (or the events) give
        # the lowest uncached share. So a group of one-shots sharing a long prompt (a few in flight at a time)
        # stays whole, and a burst of new sessions sharing an agent prompt (all in flight at once) spreads.
        own: dict[str, tuple[int, int, int]] = {}
        if p.group_pending and total:
            for r in candidates:
                m = matched.get(r.name, 0)
                if m and shares[r.name] >= p.cache_threshold:
                    own[r.name] = self.group(r.name, keys, m)
            if bound is None and p.session_affinity:  # (without affinity every turn comes here: guard them all)
                over = {name for name in over if name not in own or own[name][0] >= p.balance_abs}
        allowed = [r for r in candidates if r.name not in over]  # never empty: the least loaded is not over
        low = min(r.load for r in allowed)
        mean = sum(r.load for r in allowed) / len(allowed)
        kv_low = min(r.kv_usage for r in allowed)
        # The group does not demand a second replica (one request never does).
        whole = {name for name, (n, _, _) in own.items() if n <= max(1.0, mean)}
        pending = {r.name: r.pending_bytes if r.name not in own
                   else min(r.pending_bytes, own[r.name][2 if r.name in whole else 1]) for r in candidates}
        pend_low = min(pending[r.name] for r in allowed)
        size = max(req.size, 1)
        tie = req.session or ""
        # A new session stays where it is placed for all its turns: the load it joins there weighs that many
        # times — this request once (on a replica keeping its group whole, the group's own requests only, as
        # above), its later turns (`turns` − 1) with everything bound there. A one-shot, or a group of them,
        # weighs 1: it stays whole on its replica by its prefix.
        turns = self.turns() if bound is None else 1.0
        first = {r.name: own[r.name][0] if bound is None and r.name in whole else r.load for r in allowed}
        first_low = min(first.values())

        def cost(r: Replica) -> tuple[float, float, float, float, int]:
            uncached = 1.0 - shares[r.name] if total or req.event_share else 0.0
            joined = (first[r.name] - first_low) + (turns - 1.0) * (r.load - low)
            busier = (p.w_pending * (pending[r.name] - pend_low) / size + p.w_load * joined / (mean + 1.0)
                      + p.w_kv * (r.kv_usage - kv_low))
            return (round(uncached + busier, 9), r.load, r.kv_usage, self.index.occupancy(r.name),
                    -rendezvous(tie, r.name))

        choice = min(allowed, key=cost)
        share = shares[choice.name]
        req.pending = int((1.0 - share) * req.size)
        best = max(candidates, key=lambda r: shares[r.name])
        if bound is not None or (best.name in over and shares[best.name] > share):
            return choice, "load_guard"
        return choice, ("prefix" if (total or req.event_share) and share >= p.cache_threshold else "least_loaded")

    def placed(self, req: RouteRequest, replica: Replica) -> None:
        keys = req.keys(self.params)
        if keys:
            self.index.insert(replica.name, keys)
            req.ticket = next(self._tickets)
            self._inflight.setdefault(replica.name, {})[req.ticket] = [keys, req.pending, req.size - req.pending]
        self._sent[replica.name] = self._sent.get(replica.name, 0) + req.size

    def prefilled(self, req: RouteRequest, replica: Replica) -> None:
        entry = self._inflight.get(replica.name, {}).get(req.ticket)
        if entry is not None:
            entry[1] = 0

    def ended(self, req: RouteRequest, replica: Replica) -> None:
        self._inflight.get(replica.name, {}).pop(req.ticket, None)

    def reset(self, replica: str) -> None:
        self.index.drop(replica)
        self._sent.pop(replica, None)
        self._inflight.pop(replica, None)

    def observe(self, replica: str, prev: ReplicaStats | None, stats: ReplicaStats) -> None:
        """Learn the replica's KV capacity and, from `vllm:prompt_tokens_total`, how many rendered bytes
        make a token of this model (the index is in bytes, the replica's KV in tokens)."""
        if stats.kv_tokens and self._kv_tokens.get(replica) != stats.kv_tokens:
            self._kv_tokens[replica] = stats.kv_tokens
            self._size(replica)
        if not self.params.calibrate or prev is None or prev.prompt_tokens is None or stats.prompt_tokens is None:
            return
        tokens = stats.prompt_tokens - prev.prompt_tokens
        sent = self._sent.get(replica, 0)
        if tokens <= 0 or sent <= 0:
            return  # nothing finished there yet: keep counting the bytes sent
        self._sent[replica] = 0
        self._bytes += sent
        self._tokens += tokens
        if self._tokens >= 5_000:
            ratio = self._bytes / self._tokens
            if abs(ratio - self.bytes_per_token) > 0.05 * self.bytes_per_token:
                self.bytes_per_token = ratio
                for name in self._kv_tokens:
                    self._size(name)
        if self._tokens > 1_000_000:  # keep adapting: old traffic weighs half
            self._bytes, self._tokens = self._bytes / 2, self._tokens / 2

    def set_capacity(self, replica: str, kv_tokens: int) -> None:
        self._kv_tokens[replica] = kv_tokens
        self._size(replica)

    def _size(self, replica: str) -> None:
        if self.params.index_capacity is None and replica in self._kv_tokens:
            chunks = int(self._kv_tokens[replica] * self.bytes_per_token / self.params.chunk_bytes)
            self.index.set_capacity(replica, chunks)


POLICIES: dict[str, type[Policy]] = {
    cls.name: cls for cls in (CacheAware, RoundRobin, LeastLoaded, ConsistentHash)
}


def make_policy(name: str, params: RoutingParams) -> Policy:
    try:
        return POLICIES[name](params)
    except KeyError:
        raise ValueError(f"unknown routing policy {name!r}; known: {', '.join(POLICIES)}") from None
