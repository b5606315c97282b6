"""Gemini's caches.

Explicit: `CachedContent` resources per API key, with `expireTime` on the emulators' clock; only the
expiration can change (PATCH ttl/expireTime); an expired or unknown cache answers 403 like the API.
Implicit (2.5+ models): per (API key, model) the emulator remembers recent prompts; a new request's
`cachedContentTokenCount` is its longest common token prefix with a live remembered prompt when that reaches
the model's minimum, else 0. The real granularity and lifetime are undocumented: exact tokens and 1 h
without use here (both settable).
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gateway_dev.emulators.clock import Clock


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


LATEST = 253402300799.0  # 9999-12-31T23:59:59Z, the last instant RFC 3339 (and datetime) can write


def parse_rfc3339(s: str) -> float:
    s = s.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    if "." in s:  # Python takes at most 6 fractional digits; the API sends up to 9
        head, _, rest = s.partition(".")
        digits = "".join(itertools.takewhile(str.isdigit, rest))
        s = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits):]}"
    try:
        return datetime.fromisoformat(s).timestamp()
    except (ValueError, OverflowError, OSError) as e:
        raise ValueError(f"invalid timestamp {s!r}") from e


def parse_duration(s: str) -> float:
    """Protobuf JSON Duration: "3600s", "1.5s"."""
    if not isinstance(s, str) or not s.endswith("s"):
        raise ValueError(f"invalid duration {s!r}")
    try:
        seconds = float(s[:-1])
    except ValueError:
        raise ValueError(f"invalid duration {s!r}") from None
    if not 0 <= seconds <= LATEST:  # also refuses nan and inf ("nans", "1e999s")
        raise ValueError(f"invalid duration {s!r}")
    return seconds


@dataclass
class CachedContentRecord:
    name: str
    owner: str  # API key
    model: str  # "models/<id>"
    display_name: str
    create_time: float
    update_time: float
    expire_time: float
    tokens: list[int]
    segments: list[str]
    question: str = ""
    has_system: bool = False

    def resource(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "model": self.model, "createTime": rfc3339(self.create_time),
                                  "updateTime": rfc3339(self.update_time), "expireTime": rfc3339(self.expire_time),
                                  "usageMetadata": {"totalTokenCount": len(self.tokens)}}
        if self.display_name:
            out["displayName"] = self.display_name
        return out


class CachedContentStore:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._records: dict[str, CachedContentRecord] = {}
        self._counter = itertools.count(1)

    def new_name(self, owner: str) -> str:
        digest = hashlib.sha256(f"{owner}:{next(self._counter)}:{self.clock.now()}".encode()).hexdigest()
        return "cachedContents/" + digest[:14]

    def add(self, rec: CachedContentRecord) -> None:
        self._records[rec.name] = rec

    def get(self, name: str, owner: str) -> CachedContentRecord | None:
        """The live record, or None when unknown, expired (then dropped) or owned by another key."""
        rec = self._records.get(name)
        if rec is None:
            return None
        if rec.expire_time <= self.clock.now():
            del self._records[name]
            return None
        return rec if rec.owner == owner else None

    def delete(self, name: str) -> None:
        self._records.pop(name, None)

    def list(self, owner: str) -> list[CachedContentRecord]:
        now = self.clock.now()
        for name in [n for n, r in self._records.items() if r.expire_time <= now]:
            del self._records[name]
        return [r for r in self._records.values() if r.owner == owner]

    def clear(self) -> None:
        self._records.clear()


@dataclass(slots=True)
class _Remembered:
    tokens: list[int]
    chain: list[int]
    last_used: float


@dataclass
class ImplicitCache:
    clock: Clock
    idle_ttl_s: float = 3600.0
    keep: int = 64  # prompts remembered per (key, model)
    granule: int = 64
    _prompts: dict[tuple[str, str], list[_Remembered]] = field(default_factory=dict)

    def _chain(self, tokens: list[int]) -> list[int]:
        g, h, out = self.granule, 0, [0]
        for k in range(len(tokens) // g):
            h = hash((h, tuple(tokens[k * g:(k + 1) * g])))
            out.append(h)
        return out

    def lookup(self, ns: tuple[str, str], tokens: list[int], minimum: int) -> int:
        now = self.clock.now()
        live = [r for r in self._prompts.get(ns, []) if now - r.last_used <= self.idle_ttl_s]
        self._prompts[ns] = live
        chain = self._chain(tokens)
        best, best_rec = 0, None
        for r in live:
            lo, hi = 0, min(len(chain), len(r.chain)) - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if chain[mid] == r.chain[mid]:
                    lo = mid
                else:
                    hi = mid - 1
            n = lo * self.granule
            limit = min(len(tokens), len(r.tokens))
            while n < limit and tokens[n] == r.tokens[n]:
                n += 1
            if n > best:
                best, best_rec = n, r
        if best < minimum or best_rec is None:
            return 0
        best_rec.last_used = now
        return best

    def remember(self, ns: tuple[str, str], tokens: list[int]) -> None:
        prompts = self._prompts.setdefault(ns, [])
        prompts.append(_Remembered(list(tokens), self._chain(tokens), self.clock.now()))
        if len(prompts) > self.keep:
            del prompts[0]

    def clear(self) -> None:
        self._prompts.clear()
