"""Tenant policies: the YAML format (`models`), loading with precise error locations (`loader`),
the key index (`policyset`), atomic reload (`registry`), `policy validate` (`cli`), JSON Schema (`schema`)."""

from gateway.policy.issues import PolicyError, PolicyIssue
from gateway.policy.loader import check_policies, load_policies
from gateway.policy.models import TenantPolicy
from gateway.policy.policyset import PolicySet, key_digest
from gateway.policy.registry import PolicyRegistry, ReloadResult

__all__ = [
    "PolicyError", "PolicyIssue", "PolicyRegistry", "PolicySet", "ReloadResult", "TenantPolicy",
    "check_policies", "key_digest", "load_policies",
]
