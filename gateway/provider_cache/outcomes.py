"""What the vendors actually did with the gateway's cache writes, per tenant and prefix family.

The break-even (`gateway/accounting/breakeven.py`) needs N, the number of uses of a written prefix.
Before a family has any history the layer can only assume it (a prior); after its writes have come
back in the vendors' usage, it knows: writes (requests whose usage reported tokens written, or, for
Gemini, a CachedContent created), reads (requests that read cached tokens, or used an existing
CachedContent), per TTL (short: Anthropic 5m / OpenAI 30m / Gemini's policy TTL; long: Anthropic 1h).

The rule that keeps a cache from costing more than no cache:

- the family's observed N replaces the prior once a TTL has MIN_EVIDENCE writes;
- after UNREAD_LIMIT writes in a row that no later request read, the family stops writing
  (decision `skip_unread`): a write that is never read costs its premium and buys nothing;
- a stopped family probes again after PROBE_START skipped requests, then after twice as many each
  time a probe is not read either, and resumes as soon as a read shows up. A probe is two requests
  in a row sent with cache markers (`probe`, then `probe2`): a vendor reads only at a marker, so the
  second is the one that can show the first one's write being read.

So in n requests a family makes at most `max_unread_writes(n)` writes that nobody reads: 2, then
two per probe — 3 in 11 requests, 6 in 30, 8 in 100, about 2 + 2·log₂(n/8) — plus one per request
in flight before the first outcomes arrive. Each costs at most (W − B)·P over sending the prefix
plain (`probe_bound`). Writes that are read pay for
themselves at the TTL the break-even chose. docs/provider-caches.md states the guarantee.

One small hash per family in the shared store (7-day TTL); read together with the re-use statistics
on the request path (bounded by the store timeout, fail-open to the prior); written by the stage's
`after()`, off the request path, from the response's usage.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.stores.base import KVStore, StoreUnavailable

log = logging.getLogger("gateway.provider_cache")

OUTCOME_TTL = 7 * 86400.0
MIN_EVIDENCE = 2  # writes at a TTL before its observed N replaces the prior
UNREAD_LIMIT = 2  # writes in a row never read before a family stops writing
PROBE_START = 8  # skipped requests before the first probe; doubles after each unread probe
MAX_BACKOFF = 7  # at most 8 · 2^7 = 1024 skipped requests between probes
TTL_KINDS = ("short", "long")


@dataclass(frozen=True, slots=True)
class Evidence:
    writes: tuple[int, int] = (0, 0)  # short, long
    reads: tuple[int, int] = (0, 0)
    unread: int = 0  # writes since the last read
    skipped: int = 0  # requests not written since the last probe
    probes: int = 0  # probes in a row that were not read
    pending: int = 0  # 1: the previous request was the first half of a probe

    def index(self, kind: str) -> int:
        return TTL_KINDS.index(kind)

    def observed_reuses(self, kind: str) -> float | None:
        """Reads per write at that TTL (N − 1), once there is evidence; None before."""
        i = self.index(kind)
        if self.writes[i] < MIN_EVIDENCE:
            return None
        return self.reads[i] / self.writes[i]

    @property
    def stopped(self) -> bool:
        return self.unread >= UNREAD_LIMIT

    @property
    def probe_due(self) -> bool:
        return self.skipped >= PROBE_START * 2 ** min(self.probes, MAX_BACKOFF)

    def gate(self) -> str:
        """"write" (decide by the break-even), "probe" / "probe2" (the two halves of a probe, sent with
        markers to learn again) or "skip_unread" (send without markers)."""
        if not self.stopped:
            return "write"
        if self.pending:
            return "probe2"
        return "probe" if self.probe_due else "skip_unread"

    def as_record(self) -> dict[str, int]:
        return {"writes_short": self.writes[0], "writes_long": self.writes[1], "reads_short": self.reads[0],
                "reads_long": self.reads[1], "unread": self.unread, "skipped": self.skipped, "probes": self.probes}


NONE = Evidence()


def max_unread_writes(n: int) -> int:
    """The most writes nobody reads that a family makes in n requests: UNREAD_LIMIT, then two per
    probe, the k-th probe coming after PROBE_START·(2^k − 1) skipped requests (about log₂(n/8))."""
    writes, used, k = min(n, UNREAD_LIMIT), UNREAD_LIMIT, 0
    while True:
        used += PROBE_START * 2 ** min(k, MAX_BACKOFF)
        if used >= n:
            return writes
        writes += min(2, n - used)
        used += 2
        k += 1


def probe_bound(n: int, premium_per_write: float) -> float:
    """USD a family's caching may cost over sending plain in n requests: each unread write costs at
    most `premium_per_write` = (W − B)·P (Gemini: creation read + storage for the TTL)."""
    return max_unread_writes(n) * max(0.0, premium_per_write)


def outcome_key(tenant: str, provider: str, model: str, family: str) -> str:
    digest = hashlib.blake2b(f"{provider}\x1f{model}\x1f{family}".encode(), digest_size=12).hexdigest()
    return f"gw:pc:oc:{{{tenant}}}:{digest}"


def _int(raw: Mapping[str, str], name: str) -> int:
    try:
        return int(float(raw.get(name, 0) or 0))
    except ValueError:
        return 0


def parse(raw: Mapping[str, str]) -> Evidence:
    return Evidence((_int(raw, "ws"), _int(raw, "wl")), (_int(raw, "rs"), _int(raw, "rl")), _int(raw, "u"),
                    _int(raw, "sk"), _int(raw, "pr"), _int(raw, "pp"))


@dataclass(frozen=True, slots=True)
class Outcome:
    """One request's result, from the vendor's usage (or, for Gemini, the cache decision)."""

    wrote: bool
    read: bool
    kind: str = "short"  # the TTL the write (or the markers of a read) used
    gate: str = "write"  # the gate decision the request was sent under
    written_tokens: int = 0
    read_tokens: int = 0


class OutcomeStore:
    def __init__(self, store: KVStore, timeout_s: float = 0.1) -> None:
        self.store = store
        self.timeout_s = timeout_s

    async def read(self, key: str) -> Evidence:
        try:
            async with asyncio.timeout(self.timeout_s):
                return parse(await self.store.hgetall(key))
        except (StoreUnavailable, TimeoutError) as exc:
            log.debug("cache outcomes unavailable", extra={"error": repr(exc)})
            return NONE

    async def record(self, key: str, o: Outcome) -> None:
        """Add one outcome (called from the stage's `after()`, which already runs off the request path)."""
        inc: dict[str, float] = {}
        reset: dict[str, str | int] = {}
        suffix = "s" if o.kind == "short" else "l"
        if o.wrote:
            inc["w" + suffix] = 1
            inc["wt"] = o.written_tokens
        if o.read:
            inc["r" + suffix] = 1
            inc["rt"] = o.read_tokens
            reset.update(u=0, pr=0, sk=0, pp=0)  # a read shows the family pays again
        else:
            if o.wrote:
                inc["u"] = 1
            if o.gate == "probe":
                inc["pr"] = 1
                reset.update(sk=0, pp=1)
            elif o.gate == "probe2":
                reset["pp"] = 0
            elif o.gate == "skip_unread":
                inc["sk"] = 1
        try:
            if reset:
                await self.store.hset(key, reset)
            if inc:
                await self.store.hincr(key, inc, OUTCOME_TTL)
            else:
                await self.store.expire(key, OUTCOME_TTL)
        except StoreUnavailable:
            pass
