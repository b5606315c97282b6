"""Re-use statistics per tenant and prefix, in the shared store: how often and how far apart a
prefix comes back. The break-even turns them into the expected number of reads of a cache write.

One small hash per (tenant, prefix): `n` (sightings), `last` (epoch seconds), `ivl` (exponentially
weighted mean interval, seconds) and, for a conversation, `bp` (the block the gateway's newest
conversation marker sat on, so the next request can bridge a lookback it would otherwise miss).
Reading is on the request path, bounded by a short timeout; on any store failure the caller gets
empty statistics and decides from the policy's priors (fail-open). Updates run in the background,
after the decision: two replicas updating at once may lose a sighting, which an estimate can afford.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from gateway.stores.base import KVStore, StoreUnavailable

log = logging.getLogger("gateway.provider_cache")

STATS_TTL = 7 * 86400.0
ALPHA = 0.3  # weight of the newest interval in the moving average


@dataclass(frozen=True, slots=True)
class PrefixStats:
    count: int = 0
    last_seen: float | None = None
    interval_s: float | None = None
    marker: int | None = None  # where the newest conversation marker went (Anthropic block, OpenAI turn)
    shard: int | None = None  # the prompt_cache_key shard a conversation was given (OpenAI)

    def as_record(self) -> dict[str, float | int | None]:
        return {"count": self.count, "interval_s": None if self.interval_s is None else round(self.interval_s, 3)}


EMPTY = PrefixStats()


def stats_key(tenant: str, prefix_id: str) -> str:
    return f"gw:pc:st:{{{tenant}}}:{prefix_id}"


def _parse(raw: dict[str, str]) -> PrefixStats:
    try:
        return PrefixStats(int(float(raw.get("n", 0))), float(raw["last"]) if raw.get("last") else None,
                           float(raw["ivl"]) if raw.get("ivl") else None,
                           int(float(raw["bp"])) if raw.get("bp") not in (None, "", "-1") else None,
                           int(float(raw["sh"])) if raw.get("sh") not in (None, "") else None)
    except (ValueError, KeyError):
        return EMPTY


class StatsStore:
    def __init__(self, store: KVStore, timeout_s: float = 0.1, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.timeout_s = timeout_s
        self._now = clock
        self._tasks: set[asyncio.Task[None]] = set()

    async def read(self, tenant: str, *prefix_ids: str) -> list[PrefixStats]:
        """Statistics of each prefix (EMPTY for unknown ones, or all of them when the store fails)."""
        try:
            async with asyncio.timeout(self.timeout_s):
                raws = await asyncio.gather(*(self.store.hgetall(stats_key(tenant, p)) for p in prefix_ids))
        except (StoreUnavailable, TimeoutError) as exc:
            log.debug("prefix statistics unavailable", extra={"error": repr(exc)})
            return [EMPTY for _ in prefix_ids]
        return [_parse(r) for r in raws]

    def record(self, tenant: str, prefix_id: str, seen: PrefixStats, now: float | None = None,
               marker: int | None = None, shard: int | None = None) -> None:
        """Count one more sighting (in the background); `marker`: where this request's conversation
        marker went (-1: none); `shard`: the conversation's key shard."""
        task = asyncio.get_running_loop().create_task(self._record(tenant, prefix_id, seen, now or self._now(),
                                                                   marker, shard))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _record(self, tenant: str, prefix_id: str, seen: PrefixStats, now: float,
                      marker: int | None = None, shard: int | None = None) -> None:
        fields: dict[str, str | int | float] = {"n": seen.count + 1, "last": now}
        if marker is not None:
            fields["bp"] = marker
        if shard is not None:
            fields["sh"] = shard
        if seen.last_seen is not None:
            gap = max(0.0, now - seen.last_seen)
            fields["ivl"] = gap if seen.interval_s is None else ALPHA * gap + (1 - ALPHA) * seen.interval_s
        key = stats_key(tenant, prefix_id)
        try:
            await self.store.hset(key, fields, STATS_TTL)  # one round trip, the expiry with the fields
        except StoreUnavailable:
            pass

    async def drain(self) -> None:
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
