from __future__ import annotations

import dataclasses

import pytest

from gateway.policy.loader import load_policies
from gateway.policy.models import TenantPolicy
from gateway.policy.policyset import PolicySet, key_digest

from ._helpers import Writer, digest_ref

ENV = {"ACME_KEY": "acme-secret"}


def folder_with(policy_dir: Writer, acme_extra: str = "") -> PolicySet:
    folder = policy_dir(
        acme=f'tenant: acme\napi_keys: ["env:ACME_KEY", "{digest_ref("acme-second")}"]\n{acme_extra}',
        globex=f'tenant: globex\napi_keys: ["{digest_ref("globex-secret")}"]\n',
    )
    return load_policies(folder, ENV)


def test_lookup_by_sha256_and_env_references(policy_dir: Writer) -> None:
    policies = folder_with(policy_dir)
    assert policies.lookup("acme-secret").tenant == "acme"  # env:ACME_KEY
    assert policies.lookup("acme-second").tenant == "acme"  # sha256 digest
    assert policies.lookup("globex-secret").tenant == "globex"
    assert policies.lookup("acme-secret ") is None  # exact key only; the caller strips headers
    assert policies.lookup("unknown") is None
    assert policies.lookup("") is None
    assert policies.lookup("\udcff") is None  # a lone surrogate neither raises nor matches
    assert policies.tenants == ("acme", "globex")
    assert policies.get("globex").tenant == "globex" and policies.get("nope") is None


def test_env_values_are_stripped_like_presented_keys(policy_dir: Writer) -> None:
    folder = policy_dir(acme='tenant: acme\napi_keys: ["env:ACME_KEY"]\n')
    assert load_policies(folder, {"ACME_KEY": "acme-secret\n"}).lookup("acme-secret").tenant == "acme"


def test_the_set_holds_digests_never_key_values(policy_dir: Writer) -> None:
    policies = folder_with(policy_dir)
    assert "acme-secret" not in repr(policies)
    assert set(policies._by_digest) == {key_digest("acme-secret"), key_digest("acme-second"),
                                        key_digest("globex-secret")}


def test_the_set_is_immutable(policy_dir: Writer) -> None:
    policies = folder_with(policy_dir)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policies.version = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        policies.policies["evil"] = policies.get("acme")  # type: ignore[index]
    with pytest.raises(TypeError):
        policies._by_digest[key_digest("evil")] = policies.get("acme")  # type: ignore[index]


def test_version_follows_the_effective_policy_not_the_formatting(policy_dir: Writer) -> None:
    base = folder_with(policy_dir)
    same = folder_with(policy_dir, "# a comment and a default written out\nresponse_cache: {ttl: 1h}\n")
    changed = folder_with(policy_dir, "response_cache: {ttl: 2h}\n")
    assert base.version == same.version
    assert changed.version != base.version
    assert changed.fingerprint("acme") != base.fingerprint("acme")
    assert changed.fingerprint("globex") == base.fingerprint("globex")  # other tenants' caches stay valid
    assert base.source_digest != same.source_digest  # the bytes did change


def test_a_key_rotation_changes_the_version_but_not_the_tenant_fingerprint() -> None:
    a = TenantPolicy.model_validate({"tenant": "acme", "api_keys": [digest_ref("k1")]})
    b = TenantPolicy.model_validate({"tenant": "acme", "api_keys": [digest_ref("k2")]})
    set_a, set_b = PolicySet.build([a]), PolicySet.build([b])
    assert set_a.version != set_b.version
    assert set_a.fingerprint("acme") == set_b.fingerprint("acme")
    assert set_a.lookup("k1").tenant == "acme" and set_b.lookup("k1") is None


def test_build_from_code_resolves_env_and_refuses_shared_keys() -> None:
    acme = TenantPolicy.model_validate({"tenant": "acme", "api_keys": ["env:A", "env:UNSET"]})
    globex = TenantPolicy.model_validate({"tenant": "globex", "api_keys": [digest_ref("a-key")]})
    policies = PolicySet.build([acme, globex], env={"A": "k"})
    assert policies.lookup("k").tenant == "acme" and len(policies) == 2
    with pytest.raises(ValueError, match="share a key"):
        PolicySet.build([acme, globex], env={"A": "a-key"})
