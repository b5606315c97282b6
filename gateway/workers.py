"""`serve --workers N`: which stores several worker processes need.

Workers are separate processes: anything embedded in one process is not seen by the others.

- response cache, single-flight and usage records: the embedded store serves one worker; several
  need Redis (`GATEWAY_REDIS_URL`), or each keeps its own cache and its own usage totals;
- semantic cache: the embedded Qdrant engine serves one worker; several need a Qdrant server
  (`GATEWAY_QDRANT_URL`, not `:memory:`) once a tenant enables the layer: the engine's files can be
  opened by one process only.

`serve` refuses to start several workers without them, with a message naming the setting, rather
than run with a layer that silently misses.
"""

from __future__ import annotations

from gateway.config import Settings
from gateway.policy.policyset import PolicySet


def workers_refusal(settings: Settings, workers: int, policies: PolicySet | None) -> str | None:
    """Why `workers` processes cannot run with these settings, or None."""
    if workers <= 1:
        return None
    problems: list[str] = []
    if not settings.redis_url:
        problems.append("the response cache, single-flight and usage records use the embedded in-process store, "
                        "which each worker would keep apart: set GATEWAY_REDIS_URL")
    semantic = [t for t in (policies.tenants if policies is not None else ())
                if (p := policies.get(t)) is not None and p.semantic_cache.enabled]  # type: ignore[union-attr]
    if semantic and (not settings.qdrant_url or settings.qdrant_url == ":memory:"):
        problems.append(f"the semantic cache (enabled for {', '.join(semantic[:5])}) uses the embedded Qdrant "
                        "engine, whose files one process only can open: set GATEWAY_QDRANT_URL to a Qdrant server")
    if not problems:
        return None
    return (f"serve --workers {workers}: " + "; ".join(problems)
            + ". Or run --workers 1 (scale with more gateway processes behind a load balancer, sharing Redis).")
