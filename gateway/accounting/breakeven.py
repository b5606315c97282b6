"""The break-even rule, shared by the Anthropic, Gemini and OpenAI decisions.

Caching a prefix pays when writing it once and reading it on every later use costs less than
sending it plain every time:

    W + (N − 1)·R + S  <  N·B

with W the write price, R the read price, B the plain input price (USD per prefix token), S the
storage cost per prefix token for the cache's lifetime (Gemini explicit caches; 0 elsewhere), and
N = 1 + the expected number of later requests that read it before it lapses.

Every input is kept in the `Decision` (and so in the usage record and the docs' worked examples):
a decision nobody can re-check is not worth logging. `expected_reuses_*` turn the observed re-use
interval and count of a prefix into N − 1 for a given lifetime.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

REUSE_CAP = 1000.0  # no lifetime is assumed to serve more reads than this


@dataclass(frozen=True, slots=True)
class Decision:
    cache: bool
    write_price: float
    read_price: float
    base_price: float
    expected_reuses: float  # N − 1
    storage_cost: float
    cost_with_cache: float  # W + (N − 1)·R + S, per prefix token
    cost_without_cache: float  # N·B, per prefix token

    @property
    def uses(self) -> float:
        return 1.0 + self.expected_reuses

    @property
    def cost_per_use(self) -> float:
        """Per-token cost of one use when cached: what TTL choices compare."""
        return self.cost_with_cache / self.uses

    @property
    def saving(self) -> float:
        return self.cost_without_cache - self.cost_with_cache

    def as_record(self) -> dict[str, Any]:
        out = asdict(self)
        return {k: (round(v, 12) if isinstance(v, float) else v) for k, v in out.items()}


def decide(write_price: float, read_price: float, base_price: float, expected_reuses: float,
           storage_cost: float = 0.0) -> Decision:
    """W + (N−1)·R + S < N·B, with N − 1 = `expected_reuses` (prices per token, storage per token)."""
    reuses = max(0.0, float(expected_reuses))
    with_cache = write_price + reuses * read_price + storage_cost
    without = (1.0 + reuses) * base_price
    return Decision(with_cache < without, write_price, read_price, base_price, reuses, storage_cost,
                    with_cache, without)


def best(options: dict[str, Decision]) -> tuple[str, Decision] | None:
    """The option (e.g. a TTL) with the lowest cost per use among those that pay; None if none does."""
    paying = [(name, d) for name, d in options.items() if d.cache]
    if not paying:
        return None
    return min(paying, key=lambda item: item[1].cost_per_use)


def expected_reuses_keepalive(count: int, interval_s: float | None, ttl_s: float, prior: float) -> float:
    """Reads one write is expected to serve when every hit restarts the TTL (Anthropic, OpenAI).

    With arrivals at mean interval Δ (modelled as Poisson), the next one comes within the TTL with
    p = 1 − e^(−TTL/Δ); the run of hits before the first gap longer than the TTL is geometric with
    mean p / (1 − p). Capped by what the history supports: a prefix seen n times is not assumed to
    be read more than max(n, prior) more times. Without two sightings yet, `prior`.
    """
    if count < 2 or not interval_s or interval_s <= 0:
        return prior
    p = 1.0 - math.exp(-ttl_s / interval_s)
    run = REUSE_CAP if p >= 1.0 else p / (1.0 - p)
    return min(run, REUSE_CAP, max(float(count), prior))


def expected_reuses_window(count: int, interval_s: float | None, ttl_s: float, prior: float) -> float:
    """Reads expected within one fixed lifetime (Gemini: storage is paid for the whole TTL, so the
    question is how many requests arrive in it): TTL / Δ, capped like the keep-alive case."""
    if count < 2 or not interval_s or interval_s <= 0:
        return prior
    return min(ttl_s / interval_s, REUSE_CAP, max(float(count), prior))
