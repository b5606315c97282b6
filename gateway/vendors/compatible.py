"""OpenAI-compatible upstreams declared in the config file (`upstreams:`): one spec per entry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.vendors.deepseek import USAGE as DEEPSEEK_USAGE
from gateway.vendors.spec import VendorSpec, static_key

if TYPE_CHECKING:
    from gateway.config import UpstreamConfig

# the `usage_dialect` values the config file accepts (None: the protocol's own)
USAGE_DIALECTS = {"openai": None, "deepseek": DEEPSEEK_USAGE}


def spec_for(upstream: UpstreamConfig) -> VendorSpec:
    key_env = upstream.api_key[4:] if upstream.api_key and upstream.api_key.startswith("env:") else None
    return VendorSpec(
        name=upstream.name,
        title=upstream.name,
        family="openai",
        speaks=("openai_chat",),
        native_paths={"openai_chat": "/chat/completions"},
        models=tuple(upstream.models),
        key_env=key_env,
        default_base_url=upstream.base_url.rstrip("/"),
        signer=static_key("authorization", "Bearer"),
        usage=USAGE_DIALECTS.get(upstream.usage_dialect),
        configured=True,
    )
