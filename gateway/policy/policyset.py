"""A loaded, validated set of tenant policies and the key index that finds a tenant by its key.

The index maps SHA-256 digests of keys to tenants, so a presented key is hashed once and found in
O(1). Only digests are held — for `env:` references the variable's value is hashed at load time
and dropped — so a dump of this object never shows a key. A dict lookup on a digest leaks no
useful timing: an attacker learns at most about digests, not about the key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gateway.policy.issues import PolicyIssue
from gateway.policy.models import TenantPolicy


def key_digest(key: str) -> bytes:
    """The digest a presented key is looked up by (the same `sha256:` users compute with sha256sum)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def tenant_fingerprint(policy: TenantPolicy) -> str:
    """A short hash of everything in a tenant's policy except its keys (rotating a key changes nothing
    cached); caches that must start afresh when a tenant's policy changes can put it in their keys."""
    data = policy.model_dump(mode="json", exclude={"api_keys"})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class PolicySet:
    """Immutable: a reload builds a new set and swaps the reference (see `PolicyRegistry`)."""

    policies: Mapping[str, TenantPolicy]
    _by_digest: Mapping[bytes, TenantPolicy] = field(repr=False)
    version: str  # hash of the effective policies of every tenant; changes when any policy changes
    fingerprints: Mapping[str, str]  # tenant → tenant_fingerprint
    source_digest: str = ""  # hash of the raw file bytes (reload_if_changed compares it)
    warnings: tuple[PolicyIssue, ...] = ()
    files: tuple[str, ...] = ()

    @classmethod
    def build(cls, policies: Iterable[TenantPolicy], digests: Mapping[bytes, str] | None = None,
              env: Mapping[str, str] | None = None, *, source_digest: str = "",
              warnings: Iterable[PolicyIssue] = (), files: Iterable[str] = ()) -> PolicySet:
        """Builds a set from validated policies. `digests` (digest → tenant) comes from the loader,
        which has already checked duplicates; without it the keys are resolved here against `env`
        (unset variables are skipped) — handy for tests and for code that builds policies itself."""
        by_name = {p.tenant: p for p in policies}
        if digests is None:
            digests = {}
            for policy in by_name.values():
                for ref in policy.api_keys:
                    digest = resolve_key_ref(ref, env or {})
                    if digest is not None and digests.setdefault(digest, policy.tenant) != policy.tenant:
                        raise ValueError(f"tenants {digests[digest]!r} and {policy.tenant!r} share a key")
        version_src = json.dumps(
            [by_name[name].model_dump(mode="json") for name in sorted(by_name)], sort_keys=True)
        return cls(
            policies=MappingProxyType(dict(sorted(by_name.items()))),
            _by_digest=MappingProxyType({d: by_name[t] for d, t in digests.items()}),
            version=hashlib.sha256(version_src.encode()).hexdigest()[:16],
            fingerprints=MappingProxyType({name: tenant_fingerprint(p) for name, p in by_name.items()}),
            source_digest=source_digest,
            warnings=tuple(warnings),
            files=tuple(files),
        )

    def lookup(self, api_key: str) -> TenantPolicy | None:
        """The tenant whose `api_keys` hold this key, or None. An empty key never matches."""
        if not api_key:
            return None
        return self._by_digest.get(key_digest(api_key))

    def get(self, tenant: str) -> TenantPolicy | None:
        return self.policies.get(tenant)

    @property
    def tenants(self) -> tuple[str, ...]:
        return tuple(self.policies)

    def fingerprint(self, tenant: str) -> str | None:
        return self.fingerprints.get(tenant)

    def __len__(self) -> int:
        return len(self.policies)


def resolve_key_ref(ref: str, env: Mapping[str, str]) -> bytes | None:
    """`sha256:<hex>` → those bytes; `env:VAR` → digest of the variable's value, None when it is unset
    or blank (an empty value must not become a key that an empty header would match)."""
    kind, _, rest = ref.partition(":")
    if kind == "sha256":
        return bytes.fromhex(rest)
    if kind == "env":
        # Stripped like the presented key is: a Secret created from a file often ends in a newline.
        value = (env.get(rest) or "").strip()
        return key_digest(value) if value else None
    raise ValueError("not a key reference")
