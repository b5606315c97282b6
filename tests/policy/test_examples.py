"""The repo's example policy folder (`policies/`), which `serve` and the demo use by default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway.policy.loader import check_policies, load_policies

ROOT = Path(__file__).resolve().parents[2]
ENV = {"ACME_API_KEY": "acme-demo", "GLOBEX_API_KEY": "globex-demo", "INITECH_API_KEY": "initech-demo"}


def test_examples_load_and_each_key_finds_its_tenant() -> None:
    policies = load_policies(ROOT / "policies", ENV)
    assert policies.tenants == ("acme", "globex", "initech") and policies.warnings == ()
    for var, key in ENV.items():
        assert policies.lookup(key).tenant == var.removesuffix("_API_KEY").lower()
    assert policies.lookup("demo-globex-key").tenant == "globex"  # documented demo key (docs/policy.md)


def test_examples_without_secrets_still_validate_with_warnings() -> None:
    outcome = check_policies(ROOT / "policies", {})
    assert outcome.errors == [] and len(outcome.warnings) >= 3


def test_examples_show_the_documented_choices() -> None:
    policies = load_policies(ROOT / "policies", ENV)
    acme, globex, initech = (policies.get(t) for t in ("acme", "globex", "initech"))
    assert globex.upstream_keys == "passthrough" and acme.upstream_keys == "gateway"
    assert acme.semantic_cache.enabled and acme.semantic_cache.threshold >= 0.9
    assert not initech.semantic_cache.enabled  # off unless a tenant opts in
    assert initech.response_cache.enabled and initech.response_cache.ttl == 3600.0
    assert acme.response_cache.scope == "tenant" and globex.response_cache.scope == "user"
    assert acme.semantic_cache.exclude_patterns == initech.semantic_cache.exclude_patterns != []


@pytest.mark.parametrize(("question", "excluded"), [
    ("What is the current price of the Pro plan?", True),
    ("What's the latest version of the SDK?", True),
    ("Is the API down right now?", True),
    ("今天北京天气怎么样？", True),
    ("最新的退货政策是什么？", True),
    ("实时汇率是多少", True),
    ("Please update the address for jane.doe@example.com", True),
    ("Call me back on +1 415 555 0123", True),
    ("Where is order 88812345?", True),
    ("What happened on 2026-11-03?", True),
    ("How do I reset my password?", False),
    ("How do I export a report to CSV?", False),
    ("如何申请增值税专用发票？", False),
    ("What's new in version 2.14?", False),
])
def test_default_exclusions(question: str, excluded: bool) -> None:
    patterns = load_policies(ROOT / "policies", ENV).get("initech").semantic_cache.exclude_patterns
    assert any(re.search(p, question, re.IGNORECASE) for p in patterns) is excluded
