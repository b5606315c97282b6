"""Anthropic: the Messages API, `cache_control` breakpoints; native Messages clients always come here."""

from __future__ import annotations

from gateway.provider_cache.plugins import ANTHROPIC_CACHE
from gateway.vendors.spec import LintHints, VendorSpec, static_key

SPEC = VendorSpec(
    name="anthropic",
    title="Anthropic",
    family="anthropic",
    speaks=("anthropic_messages",),
    native_paths={"anthropic_messages": "/v1/messages"},
    models=("claude-*",),
    owns_clients=("anthropic_messages",),
    key_env="ANTHROPIC_API_KEY",
    base_url_env="GATEWAY_ANTHROPIC_BASE_URL",
    default_base_url="https://api.anthropic.com",
    signer=static_key("x-api-key", ""),
    default_headers={"anthropic-version": "2023-06-01"},
    error_shape="anthropic",
    provider_cache=ANTHROPIC_CACHE,
    lint=LintHints(prefix_fields={"anthropic_messages": ("tools", "system")}, default_model="claude-sonnet-4-5"),
    owns_path=lambda path: path.startswith("/v1/messages"),
)
