"""The break-even verdict of a prompt template, from what its requests actually did.

Caching a prefix pays when W + (N−1)·R < N (prices in units of the plain input price; plus the
storage S per prefix token for Gemini explicit caches) — the rule of
`gateway/accounting/breakeven.py`, which this module calls with OBSERVED inputs:

- N, the mean number of uses of a written prefix = (reads + writes) / writes, where reads are the
  template's upstream requests that read the provider cache (`cached_input_tokens > 0`) and writes
  those that wrote it (`cache_creation_input_tokens > 0`). Vendors that do not report writes
  (OpenAI before GPT-5.6, DeepSeek, Gemini implicit) build their cache from every request that
  did not read it, so there writes = upstream requests − reads. A template with reads but no write
  in the window (written earlier) counts one write.
- W and R, the write and read price of the template's model over its input price (the long-TTL
  write price when most written tokens used it).
- S, the storage the template paid (Gemini CachedContent) per written prefix token, where the
  prefix is the mean number of tokens a read found cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.accounting.breakeven import decide
from gateway.accounting.pricing import Prices


@dataclass(frozen=True, slots=True)
class Verdict:
    applies: bool  # False: the template never touched a provider cache (nothing to judge)
    pays: bool
    uses: float  # N
    write: float  # W, in input prices
    read: float  # R, in input prices
    storage: float  # S, in input prices
    left: float  # W + (N−1)·R + S
    right: float  # N

    def as_dict(self) -> dict[str, Any]:
        return {"applies": self.applies, "pays": self.pays, "N": self.uses, "W": self.write, "R": self.read,
                "S": self.storage, "with_cache": self.left, "without_cache": self.right}


NOT_APPLICABLE = Verdict(False, False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def observed_uses(reads: int, writes: int, upstream: int, writes_reported: bool) -> tuple[float, int]:
    """N and the write count it rests on (see the module doc)."""
    if not writes_reported:
        writes = max(0, upstream - reads)
    if reads == 0 and writes == 0:
        return 0.0, 0
    writes = max(writes, 1)
    return (reads + writes) / writes, writes


# Vendors whose usage always reports cache writes (a zero there means nothing was written).
WRITES_REPORTED = {"anthropic"}


def verdict(agg: dict[str, int | float], prices: Prices | None, provider: str = "") -> Verdict:
    """The template's verdict from its aggregate counters and its model's prices."""
    reads, writes_seen = int(agg.get("provider_reads", 0)), int(agg.get("provider_writes", 0))
    upstream = int(agg.get("upstream_requests", 0))
    if prices is None or prices.input <= 0 or (reads == 0 and writes_seen == 0):
        return NOT_APPLICABLE
    reported = provider in WRITES_REPORTED or writes_seen > 0
    uses, writes = observed_uses(reads, writes_seen, upstream, writes_reported=reported)
    if uses == 0:
        return NOT_APPLICABLE
    base = prices.input
    creation = float(agg.get("cache_creation_input_tokens", 0))
    long_share = float(agg.get("cache_write_long_tokens", 0)) / creation if creation else 0.0
    write = prices.write_long_rate if long_share > 0.5 else prices.write_rate
    storage_per_token = 0.0
    storage = float(agg.get("storage_cost_usd", 0.0))
    cached = float(agg.get("cached_input_tokens", 0)) - float(agg.get("hit_cached_input_tokens", 0))
    if storage > 0 and reads > 0 and cached > 0:
        prefix_tokens = cached / reads
        storage_per_token = storage / writes / prefix_tokens
    d = decide(write, prices.read_rate, base, uses - 1.0, storage_per_token)
    return Verdict(True, d.cache, uses, write / base, prices.read_rate / base, storage_per_token / base,
                   d.cost_with_cache / base, d.cost_without_cache / base)
