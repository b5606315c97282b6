"""The caller's `Cache-Control` directives that set an entry's age limits, per request.

- `max-age=N`: accept a stored answer no older than N seconds, and keep the answer this request
  stores for N seconds (never longer than the tenant's `response_cache.ttl`).
- `s-maxage=N`: the same for entries shared by the whole tenant (scope `tenant`); where it is given
  it wins over `max-age` there, as it does for any shared HTTP cache. Per-user entries ignore it.
- `stale-if-error=N`: when the vendor fails, accept an expired answer at most N seconds past its
  freshness (never more than the tenant's `response_cache.stale_if_error`).

`no-cache` and `no-store` are read by `gateway.request_policy`. A directive with a value that is not
a whole number of seconds is refused with a 400: a silently ignored TTL would cache for the wrong time.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.errors import GatewayError

_MAX_SECONDS = 10 * 365 * 86400  # larger values are read as "forever" (bounded by the policy anyway)


@dataclass(frozen=True, slots=True)
class AgeLimits:
    max_age: float | None = None  # accept entries no older than this; store for this long
    stale_if_error: float | None = None  # the caller's stale window; None = the policy's


def _seconds(name: str, raw: str) -> float:
    value = raw.strip().strip('"')
    if not value.isdigit():
        raise GatewayError(400, f"Cache-Control {name} must be a whole number of seconds, not {value[:40]!r}.")
    return float(min(int(value), _MAX_SECONDS))


def age_limits(header: str, shared: bool) -> AgeLimits:
    """The limits `header` (a request's Cache-Control value) sets; `shared`: the entry is tenant-wide."""
    if not header:
        return AgeLimits()
    found: dict[str, float] = {}
    for part in header.split(","):
        name, eq, raw = part.strip().partition("=")
        name = name.strip().lower()
        if name in ("max-age", "s-maxage", "stale-if-error"):
            if not eq:
                raise GatewayError(400, f"Cache-Control {name} needs a value in seconds ({name}=60).")
            found[name] = _seconds(name, raw)
    max_age = found.get("s-maxage") if shared and "s-maxage" in found else found.get("max-age")
    return AgeLimits(max_age=max_age, stale_if_error=found.get("stale-if-error"))
