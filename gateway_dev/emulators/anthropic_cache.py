"""Anthropic's prompt caching (docs/emulators.md, "Anthropic").

The request is flattened into blocks in the order tools -> system -> messages. Breakpoints are the blocks
carrying `cache_control` plus, with a top-level `cache_control`, the last eligible block; at most 4.
An entry is the hash of the whole prefix up to and including a breakpoint block, per (API key, model).
Reads: for every breakpoint, 20 positions back from it are checked (the breakpoint itself first); the
longest live entry wins and its TTL restarts. A run of consecutive `tool_use` blocks is one position, and so
is a run of consecutive `tool_result` blocks, so a turn with many parallel tool calls does not push the
previous request's entry out of the window on its own. Writes: every breakpoint beyond the read position
whose prefix reaches the model's minimum.
`cache_creation_input_tokens` = tokens from the read position to the last written breakpoint, split into
5m/1h by the TTL of the breakpoint closing each span; `input_tokens` = the rest (everything after the last
breakpoint, and prefixes below the minimum).
`tool_choice` and the thinking settings are folded into the first message block's hash: changing them
invalidates the messages part only, as the invalidation table says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway_dev.emulators.clock import Clock

TTLS = {"5m": 300.0, "1h": 3600.0}


@dataclass(slots=True)
class ABlock:
    tokens: tuple[int, ...]
    identity: str  # canonical content (no cache_control) for hashing and the answer seed
    where: str  # "messages.1.content.0" for error messages
    eligible: bool = True  # thinking blocks cannot carry cache_control
    cache_ttl: str | None = None  # set when this block is a breakpoint
    explicit: bool = False
    run: str | None = None  # "tool_use" | "tool_result": consecutive blocks of one kind are one lookback position


@dataclass
class AnthropicPlan:
    read: int = 0
    creation: int = 0
    creation_5m: int = 0
    creation_1h: int = 0
    total: int = 0
    _writes: list[tuple[tuple, str]] = field(default_factory=list)
    _cache: AnthropicPromptCache | None = None

    @property
    def input_tokens(self) -> int:
        return self.total - self.read - self.creation

    def commit(self) -> None:
        if self._cache is not None:
            self._cache._write(self._writes)
            self._writes = []


class AnthropicPromptCache:
    def __init__(self, clock: Clock, *, lookback: int = 20) -> None:
        self.clock = clock
        self.lookback = lookback
        self._entries: dict[tuple, tuple[float, str]] = {}  # key -> (expires at, ttl)
        self._writes_since_sweep = 0

    def _write(self, writes: list[tuple[tuple, str]]) -> None:
        now = self.clock.now()
        for key, ttl in writes:
            self._entries[key] = (now + TTLS[ttl], ttl)
        self._writes_since_sweep += len(writes)
        if self._writes_since_sweep > 20_000:
            self._writes_since_sweep = 0
            self._entries = {k: v for k, v in self._entries.items() if v[0] >= now}

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, ns: tuple, blocks: list[ABlock], min_tokens: int, salt_at: int | None, salt: str) -> AnthropicPlan:
        cum: list[int] = []
        hashes: list[int] = []
        h, total = 0, 0
        for i, b in enumerate(blocks):
            total += len(b.tokens)
            cum.append(total)
            h = hash((h, b.identity, salt if i == salt_at else None))
            hashes.append(h)
        plan = AnthropicPlan(total=total, _cache=self)
        bps = [i for i, b in enumerate(blocks) if b.cache_ttl is not None]
        if not bps:
            return plan
        now = self.clock.now()
        read_at = -1
        for bp in bps:
            for i in positions_back(blocks, bp, self.lookback):
                if i <= read_at:
                    break
                hit = self._entries.get((ns, hashes[i]))
                if hit is not None and hit[0] >= now:
                    read_at = i
                    break
        if read_at >= 0:
            _, ttl = self._entries[(ns, hashes[read_at])]
            self._entries[(ns, hashes[read_at])] = (now + TTLS[ttl], ttl)  # "refreshed ... each time it is used"
            plan.read = cum[read_at]
        start = plan.read
        for bp in bps:
            if bp <= read_at or cum[bp] < min_tokens:
                continue
            ttl = blocks[bp].cache_ttl or "5m"
            plan._writes.append(((ns, hashes[bp]), ttl))
            span = cum[bp] - start
            if ttl == "1h":
                plan.creation_1h += span
            else:
                plan.creation_5m += span
            start = cum[bp]
        plan.creation = start - plan.read
        return plan


def positions_back(blocks: list[ABlock], bp: int, lookback: int) -> list[int]:
    """Block indices the lookback checks from breakpoint `bp`, nearest first: `lookback` positions, where a
    run of consecutive `tool_use` (or `tool_result`) blocks counts as one position."""
    out: list[int] = []
    positions = 0
    previous: str | None = None
    for i in range(bp, -1, -1):
        run = blocks[i].run
        if run is None or run != previous:
            positions += 1
            if positions > lookback:
                break
        previous = run
        out.append(i)
    return out


def apply_breakpoints(blocks: list[ABlock], top_level: dict[str, Any] | None) -> list[str]:
    """Validate `cache_control` placement and add the automatic breakpoint; returns error messages (empty:
    valid). Raises nothing so the caller renders the vendor's error."""
    errors: list[str] = []
    if top_level is not None:
        ttl = _ttl(top_level, "cache_control", errors)
        target = next((b for b in reversed(blocks) if b.eligible), None)
        if target is not None:
            if target.explicit:
                if target.cache_ttl != ttl:
                    errors.append("cache_control: the automatic cache_control conflicts with a different ttl already "
                                  f"set on {target.where}.")
            else:
                target.cache_ttl = ttl
    count = sum(1 for b in blocks if b.cache_ttl is not None)
    if count > 4:
        errors.append(f"A maximum of 4 blocks with cache_control may be provided. Found {count}.")
    seen_5m = False
    for b in blocks:
        if b.cache_ttl == "5m":
            seen_5m = True
        elif b.cache_ttl == "1h" and seen_5m:
            errors.append("cache_control: a ttl='1h' cache_control block must not come after a ttl='5m' "
                          f"cache_control block ({b.where}).")
            break
    return errors


def _ttl(cc: Any, where: str, errors: list[str]) -> str:
    if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
        errors.append(f"{where}.type: Input should be 'ephemeral'")
        return "5m"
    ttl = cc.get("ttl", "5m")
    if ttl not in TTLS:
        errors.append(f"{where}.ttl: Input should be '5m' or '1h'")
        return "5m"
    return ttl


def block_ttl(cc: Any, where: str, errors: list[str]) -> str:
    return _ttl(cc, f"{where}.cache_control", errors)
