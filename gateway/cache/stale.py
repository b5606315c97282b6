"""stale-if-error: answer from an expired response-cache entry when the vendor fails.

A tenant's `response_cache.stale_if_error` keeps entries that long past their freshness. When the
lookup finds only such an expired entry, the request goes upstream as a miss; if the vendor then
fails before any byte reached the client (a 5xx, a 429, a timeout or an unreachable host), the
request path asks the `StaleFallback` for that entry instead of relaying the error. The answer is
marked: `x-gateway-stale: stale-if-error` and `Age` headers, and `stale` in the usage record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gateway.answer import Answer
from gateway.context import RequestContext
from gateway.pipeline import Hit

STALE_HEADER = "x-gateway-stale"


@dataclass(frozen=True, slots=True)
class Stale:
    answer: Answer
    age_s: float  # seconds since the answer was stored


class StaleFallback(Protocol):
    async def stale_answer(self, ctx: RequestContext, status: int) -> Hit | None:
        """The vendor failed with `status` (the gateway's own 502/504 for unreachable/timeout): a
        stale answer to give instead, or None."""
        ...


def serves_stale(status: int) -> bool:
    """Failures an older answer may stand in for: the vendor's or the gateway's 5xx, and 429."""
    return status >= 500 or status == 429


def serve_stale(ctx: RequestContext, stale: Stale, status: int) -> Answer:
    ctx.record["stale"] = {"reason": "stale-if-error", "age_s": round(stale.age_s, 3), "upstream_status": status}
    return stale.answer


def stale_headers(ctx: RequestContext) -> dict[str, str]:
    stale = ctx.record.get("stale")
    if not stale:
        return {}
    return {STALE_HEADER: "stale-if-error", "age": str(int(stale["age_s"]))}


async def fallback(hook: StaleFallback | None, ctx: RequestContext, status: int) -> Hit | None:
    if hook is None or not serves_stale(status):
        return None
    return await hook.stale_answer(ctx, status)
