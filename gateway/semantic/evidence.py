"""Evidence about served (or would-be) semantic hits, and the bound that decides the reworded lane.

The idea follows vCache (verified semantic prompt caching): how far a cosine can be trusted differs
from entry to entry and neighbourhood to neighbourhood, so the decision is learned from observed
outcomes rather than set once. This is our own formulation of that idea:

- An *observation* is (similarity of the pair, was the cached answer right for the new question).
  Observations come from sampled verification (the fresh upstream answer compared with the cached
  one), from a judge model, and from the application's feedback.
- Each entry keeps its own observations: a wrong one at similarity s raises that entry's floor to
  s, so a look-alike of the same kind (as similar or less) misses from then on.
- Each neighbourhood (tenant × language × lane) pools its entries' observations. The error rate at
  similarity s is bounded from the observations in a window [s - w, s] below it: assuming a closer
  pair is never *more* likely wrong, each of them is at least as hard as the new pair, so their
  error rate over-estimates the new pair's. The bound is the Clopper-Pearson upper limit, taken
  over a few window widths with a Bonferroni split of the confidence; the lane serves only when
  it is below the tenant's `max_error_rate`.

With `max_error_rate` 0.01 at 95 % confidence that needs several hundred right observations in the
window and none wrong: before any evidence, reworded pairs miss. Everything is in memory, bounded
(entries and neighbourhoods are LRUs, observations ring buffers); a restart starts from no evidence,
which only makes the lane more careful.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

K = TypeVar("K")

WINDOWS = (0.02, 0.05, 0.10, 0.20, 2.0)  # cosine widths below the new pair's similarity
ENTRY_MARGIN = 0.01  # a wrong hit at s blocks the entry up to s + this


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p), summed in log space (k is small here)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(0, min(k, n) + 1):
        total += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
    return min(1.0, total)


def upper_bound(k: int, n: int, confidence: float) -> float:
    """Clopper-Pearson one-sided upper confidence limit of a rate with k events in n trials."""
    if n <= 0:
        return 1.0
    if k >= n:
        return 1.0
    alpha = 1.0 - confidence
    if k == 0:
        return 1.0 - alpha ** (1.0 / n)
    lo, hi = k / n, 1.0
    for _ in range(60):  # bisection: the p at which P(X ≤ k) falls to alpha
        mid = (lo + hi) / 2
        if binom_cdf(k, n, mid) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def lower_bound(k: int, n: int, confidence: float) -> float:
    """Clopper-Pearson one-sided lower confidence limit of a rate with k successes in n trials."""
    return 0.0 if n <= 0 else 1.0 - upper_bound(n - k, n, confidence)


@dataclass(frozen=True, slots=True)
class Assessment:
    serve: bool
    bound: float  # the upper confidence limit of the error rate at this similarity (1.0: no evidence)
    n: int  # observations in the window that gave the bound
    wrong: int
    reason: str  # "evidence" when served, else why not


class EvidenceBook:
    """Observations per entry and per neighbourhood, and the reworded lane's decision."""

    def __init__(self, *, confidence: float = 0.95, max_entries: int = 50_000, per_entry: int = 64,
                 per_neighbourhood: int = 4096, max_neighbourhoods: int = 4096) -> None:
        if not 0.5 <= confidence < 1.0:
            raise ValueError("confidence must be in [0.5, 1)")
        self.confidence = confidence
        self.max_entries = max_entries
        self.per_entry = per_entry
        self.per_neighbourhood = per_neighbourhood
        self.max_neighbourhoods = max_neighbourhoods
        self._entries: OrderedDict[str, deque[tuple[float, bool]]] = OrderedDict()
        self._pools: OrderedDict[tuple[str, str, str], deque[tuple[float, bool]]] = OrderedDict()

    def record(self, tenant: str, lang: str, lane: str, entry_id: str, similarity: float, correct: bool) -> None:
        obs = (float(similarity), bool(correct))
        _ring(self._entries, entry_id, self.per_entry, self.max_entries).append(obs)
        _ring(self._pools, (tenant, lang, lane), self.per_neighbourhood, self.max_neighbourhoods).append(obs)

    def entry_floor(self, entry_id: str) -> float:
        """The highest similarity at which this entry's answer was shown wrong (-inf: never)."""
        obs = self._entries.get(entry_id)
        return max((s for s, ok in obs if not ok), default=-math.inf) if obs else -math.inf

    def observations(self, tenant: str, lang: str, lane: str) -> list[tuple[float, bool]]:
        return list(self._pools.get((tenant, lang, lane), ()))

    def assess(self, tenant: str, lang: str, lane: str, entry_id: str, similarity: float,
               max_error_rate: float) -> Assessment:
        """May a would-be hit at `similarity` on `entry_id` be served within `max_error_rate`?"""
        if similarity <= self.entry_floor(entry_id) + ENTRY_MARGIN:
            return Assessment(False, 1.0, 0, 0, "entry_shown_wrong")
        pool = self._pools.get((tenant, lang, lane))
        if not pool:
            return Assessment(False, 1.0, 0, 0, "no_evidence")
        confidence = 1.0 - (1.0 - self.confidence) / len(WINDOWS)
        best = Assessment(False, 1.0, 0, 0, "no_evidence")
        obs = np.array(pool, dtype=np.float64)
        sims, right = obs[:, 0], obs[:, 1] > 0.5
        below = sims <= similarity
        for width in WINDOWS:
            inside = below & (sims >= similarity - width)
            n = int(inside.sum())
            if not n:
                continue
            wrong = n - int((inside & right).sum())
            # the limit is above the observed rate: past the bound already, it need not be computed
            bound = wrong / n if wrong / n > max_error_rate else upper_bound(wrong, n, confidence)
            if bound < best.bound:
                best = Assessment(bound <= max_error_rate, bound, n, wrong,
                                  "evidence" if bound <= max_error_rate else "error_bound_too_high")
        return best

    def wrong_above(self, tenant: str, lang: str, lane: str, similarity: float) -> bool:
        """A wrong observation in the neighbourhood at least as similar as `similarity` (minus the
        entry margin): a pair that close was wrong, so a less similar one is not served on a prior."""
        pool = self._pools.get((tenant, lang, lane))
        return pool is not None and any(not ok and s >= similarity - ENTRY_MARGIN for s, ok in pool)

    def forget(self, entry_id: str) -> None:
        self._entries.pop(entry_id, None)


def _ring(table: OrderedDict[K, deque[tuple[float, bool]]], key: K, size: int,
             limit: int) -> deque[tuple[float, bool]]:
    ring = table.get(key)
    if ring is None:
        ring = table[key] = deque(maxlen=size)
        while len(table) > limit:
            table.popitem(last=False)
    else:
        table.move_to_end(key)
    return ring
