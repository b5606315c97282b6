"""OpenAI's prompt cache.

Classic models (before GPT-5.6): automatic, exact-prefix, prompts of >= 1024 tokens, hits in 128-token
steps (`cached_tokens` is 1024, 1152, ...), namespace = (API key, model, `prompt_cache_key`). Retention
`in_memory`: gone after `in_memory_idle_s` without use (the guide says 5-10 min; default 5 min) and at most
1 h after it was written; `24h`: at most 24 h after it was written. Writes are free.

GPT-5.6 and later: breakpoints. Explicit ones are content parts marked `prompt_cache_breakpoint`; in the
default `implicit` mode OpenAI adds one at the end of the latest message. Reads consider the latest 80
breakpoints and take the longest live one (no rounding); each request writes at most 4 new entries (the
implicit one plus the latest 3 explicit, or the latest 4 explicit in `explicit` mode), each >= 1024 tokens;
`cache_write_tokens` = tokens from the end of the read prefix to the furthest written breakpoint. An entry
lives `ttl` (30 min, or 12 h on Responses) after its last use.

Entries are keyed by a chain of hashes over 128-token blocks (plus the tail for breakpoints), so a lookup is
O(prompt length), never O(entries).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway_dev.emulators.clock import Clock

TTL_SECONDS = {"30m": 1800.0, "12h": 43200.0}


@dataclass(slots=True)
class _Entry:
    created: float
    last_used: float
    retention: str  # "in_memory" | "24h" | "30m" | "12h"


@dataclass(slots=True)
class Breakpoint:
    position: int  # tokens before the boundary
    ttl: str = "30m"
    implicit: bool = False


@dataclass
class CachePlan:
    """The outcome of a lookup; `commit()` performs the writes once the response begins."""

    cached_tokens: int = 0
    write_tokens: int = 0
    write_by_ttl: dict[str, int] = field(default_factory=lambda: {"30m": 0, "12h": 0})
    _writes: list[tuple[tuple, str]] = field(default_factory=list)
    _cache: OpenAIPromptCache | None = None

    def commit(self) -> None:
        if self._cache is not None:
            self._cache._write(self._writes)
            self._writes = []


class OpenAIPromptCache:
    def __init__(self, clock: Clock, *, min_tokens: int = 1024, step: int = 128, in_memory_idle_s: float = 300.0,
                 in_memory_max_s: float = 3600.0, extended_s: float = 86400.0, max_read_breakpoints: int = 80,
                 max_writes: int = 4) -> None:
        self.clock = clock
        self.min_tokens, self.step = min_tokens, step
        self.in_memory_idle_s, self.in_memory_max_s, self.extended_s = in_memory_idle_s, in_memory_max_s, extended_s
        self.max_read_breakpoints, self.max_writes = max_read_breakpoints, max_writes
        self._entries: dict[tuple, _Entry] = {}
        self._writes_since_sweep = 0

    # -- liveness -------------------------------------------------------------------------------------
    def _alive(self, e: _Entry, now: float) -> bool:
        if e.retention == "in_memory":
            return now - e.last_used <= self.in_memory_idle_s and now - e.created <= self.in_memory_max_s
        if e.retention == "24h":
            return now - e.created <= self.extended_s
        return now - e.last_used <= TTL_SECONDS[e.retention]

    def _live(self, key: tuple, now: float) -> _Entry | None:
        e = self._entries.get(key)
        if e is not None and not self._alive(e, now):
            del self._entries[key]
            return None
        return e

    def _write(self, writes: list[tuple[tuple, str]]) -> None:
        now = self.clock.now()
        for key, retention in writes:
            e = self._live(key, now)
            if e is None:
                self._entries[key] = _Entry(now, now, retention)
            else:
                e.last_used = now
                if _rank(retention) > _rank(e.retention):
                    e.retention = retention
        self._writes_since_sweep += len(writes)
        if self._writes_since_sweep > 20_000:
            self._writes_since_sweep = 0
            self._entries = {k: e for k, e in self._entries.items() if self._alive(e, now)}

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    # -- hashing --------------------------------------------------------------------------------------
    def _chain(self, tokens: list[int], upto: int) -> list[int]:
        """h[k] = hash of the first k*step tokens, for k = 0..upto//step."""
        hashes = [0]
        h = 0
        s = self.step
        for k in range(upto // s):
            h = hash((h, tuple(tokens[k * s:(k + 1) * s])))
            hashes.append(h)
        return hashes

    def _prefix_key(self, ns: tuple, chain: list[int], tokens: list[int], position: int) -> tuple:
        k = position // self.step
        return (ns, "bp", position, hash((chain[k], tuple(tokens[k * self.step:position]))))

    # -- classic --------------------------------------------------------------------------------------
    def lookup_classic(self, ns: tuple, tokens: list[int], retention: str) -> CachePlan:
        n = len(tokens)
        plan = CachePlan(_cache=self)
        if n < self.min_tokens:
            return plan
        chain = self._chain(tokens, n)
        now = self.clock.now()
        first = self.min_tokens // self.step
        for k in range(len(chain) - 1, first - 1, -1):
            e = self._live((ns, chain[k]), now)
            if e is not None:
                e.last_used = now
                plan.cached_tokens = k * self.step
                break
        plan._writes = [((ns, chain[k]), retention) for k in range(first, len(chain))]
        return plan

    # -- GPT-5.6+ breakpoints -------------------------------------------------------------------------
    def lookup_breakpoints(self, ns: tuple, tokens: list[int], breakpoints: list[Breakpoint],
                           max_ttl: str | None = None) -> CachePlan:
        plan = CachePlan(_cache=self)
        bps = sorted({b.position: b for b in breakpoints if self.min_tokens <= b.position <= len(tokens)}.values(),
                     key=lambda b: b.position)
        if not bps:
            return plan
        chain = self._chain(tokens, bps[-1].position)
        now = self.clock.now()
        keys = {b.position: self._prefix_key(ns, chain, tokens, b.position) for b in bps}
        for b in reversed(bps[-self.max_read_breakpoints:]):
            e = self._live(keys[b.position], now)
            if e is not None:
                e.last_used = now
                plan.cached_tokens = b.position
                break
        implicit = [b for b in bps if b.implicit]
        explicit = [b for b in bps if not b.implicit]
        writable = implicit[-1:] + explicit[-(self.max_writes - len(implicit[-1:])):] if explicit else implicit[-1:]
        start = plan.cached_tokens
        for b in sorted(writable, key=lambda b: b.position):
            if b.position <= plan.cached_tokens or self._live(keys[b.position], now) is not None:
                continue
            ttl = b.ttl if b.ttl in TTL_SECONDS else "30m"
            plan._writes.append((keys[b.position], ttl))
            plan.write_by_ttl[ttl] += b.position - start
            start = b.position
        plan.write_tokens = start - plan.cached_tokens
        return plan


def _rank(retention: str) -> int:
    return {"in_memory": 0, "30m": 1, "12h": 2, "24h": 3}.get(retention, 0)
