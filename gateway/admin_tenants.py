"""`GET /admin/tenants`: every tenant and its effective policy (after `_defaults.yaml` and the
built-in defaults), as the gateway applies it now. Keys are never shown: only how many a tenant
has; the fingerprint changes when anything but the keys changes (cache entries follow it)."""

from __future__ import annotations

from typing import Any

from gateway.policy.policyset import PolicySet


def tenants_view(policies: PolicySet, tenant: str | None = None) -> dict[str, Any]:
    names = [tenant] if tenant else list(policies.tenants)
    out: list[dict[str, Any]] = []
    for name in names:
        policy = policies.get(name)
        if policy is None:
            continue
        effective = policy.model_dump(mode="json", exclude={"api_keys", "tenant"})
        out.append({"tenant": name, "api_keys": len(policy.api_keys), "fingerprint": policies.fingerprint(name),
                    "policy": effective})
    return {"version": policies.version, "tenants": out}
