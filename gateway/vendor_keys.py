"""The gateway's own vendor keys: a warning at start for each one missing, and a gateway-worded
error (not the vendor's "you didn't provide an API key", which blames a caller whose tenant key was
fine) when a request needs one that is not configured."""

from __future__ import annotations

import logging

from gateway.config import Settings
from gateway.errors import GatewayError
from gateway.policy.policyset import PolicySet

log = logging.getLogger("gateway")

KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY",
           "deepseek": "DEEPSEEK_API_KEY", "mistral": "MISTRAL_API_KEY"}
MISSING_CODE = "gateway_upstream_key_missing"


def missing_key(provider: str) -> GatewayError:
    # 401, as the vendor itself would answer without a key, but in the gateway's words: the
    # caller's tenant key was accepted; it is the gateway that has no key for this vendor.
    env = KEY_ENV.get(provider, "its key")
    return GatewayError(401, f"The gateway has no {provider} API key ({env} is unset), so it cannot call {provider} "
                             f"for you. Your gateway key was accepted; ask the gateway's operator to set {env}.",
                        MISSING_CODE)


def missing_keys(settings: Settings) -> list[str]:
    return [name for name in KEY_ENV if not settings.vendor_key(name)]


def warn_missing_keys(settings: Settings, policies: PolicySet | None) -> list[str]:
    """Log one warning line per vendor without a key (tenants that bring their own key, BYOK, do not
    need one); returns the vendors warned about."""
    missing = missing_keys(settings)
    if not missing:
        return []
    byok = policies is not None and len(policies) > 0 and all(
        (p := policies.get(t)) is not None and p.upstream_keys == "passthrough" for t in policies.tenants)
    if byok:
        return []
    for name in missing:
        log.warning("no vendor key configured: %s requests from gateway-key tenants will be refused until %s is set",
                    name, KEY_ENV[name], extra={"provider": name, "env": KEY_ENV[name]})
    return missing
