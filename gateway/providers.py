"""Which upstream serves a model, where it lives, and how it wants its key.

Routing by name follows the contract: a `vllm/` prefix or a name the vLLM pool serves goes to the
pool; configured OpenAI-compatible upstreams by their patterns; then the vendors' own families.
Native Anthropic and Gemini requests always go to their own vendor.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from gateway.config import Settings, UpstreamConfig

# protocol spoken upstream by provider kind
OPENAI_COMPATIBLE = "openai"


@dataclass(frozen=True, slots=True)
class Provider:
    name: str  # openai | anthropic | gemini | deepseek | vllm | <configured upstream name>
    vendor: str  # the wire dialect: openai | anthropic | gemini
    base_url: str  # as the vendor's SDK takes it (OpenAI-compatible ones include /v1); "" for the vLLM pool
    key_header: str  # header that carries the upstream key
    usage_dialect: str  # openai | anthropic | gemini | deepseek
    key_env: str | None = None  # for configured upstreams: env var holding their key

    def auth_headers(self, key: str) -> dict[str, str]:
        if self.key_header == "authorization":
            return {"authorization": f"Bearer {key}"}
        return {self.key_header: key}


_O_SERIES = re.compile(r"^o\d")
_OPENAI_PATTERNS = ("gpt-*", "chatgpt-*", "text-embedding-*", "omni-moderation-*", "davinci-*", "babbage-*")


class ProviderTable:
    """Resolves model names; `pool_serves` asks the vLLM pool (None when there is no pool)."""

    def __init__(self, settings: Settings, pool_serves: Callable[[str], bool] | None = None) -> None:
        self.settings = settings
        self.pool_serves = pool_serves
        self.builtin = {
            "openai": Provider("openai", "openai", settings.base_url("openai"), "authorization", "openai"),
            "anthropic": Provider("anthropic", "anthropic", settings.base_url("anthropic"), "x-api-key", "anthropic"),
            "gemini": Provider("gemini", "gemini", settings.base_url("gemini"), "x-goog-api-key", "gemini"),
            "deepseek": Provider("deepseek", "openai", settings.base_url("deepseek"), "authorization", "deepseek"),
            "vllm": Provider("vllm", "openai", "", "authorization", "openai"),
        }
        self.configured: list[tuple[UpstreamConfig, Provider]] = [
            (
                up,
                Provider(up.name, "openai", up.base_url.rstrip("/"), "authorization", up.usage_dialect,
                         key_env=up.api_key[4:] if up.api_key and up.api_key.startswith("env:") else None),
            )
            for up in settings.upstreams
        ]

    def get(self, name: str) -> Provider | None:
        return self.builtin.get(name) or next((p for _, p in self.configured if p.name == name), None)

    def for_model(self, model: str, client_vendor: str) -> Provider | None:
        """The provider for `model` asked through `client_vendor`'s protocol (None: unknown model)."""
        if client_vendor in ("anthropic", "gemini"):
            return self.builtin[client_vendor]
        if model.startswith("vllm/"):
            return self.builtin["vllm"] if self.pool_serves is not None else None
        for upstream, provider in self.configured:
            if any(fnmatch.fnmatchcase(model, pattern) for pattern in upstream.models):
                return provider
        if self.pool_serves is not None and self.pool_serves(model):
            return self.builtin["vllm"]
        if model.startswith("claude-"):
            return self.builtin["anthropic"]
        if model.startswith("gemini-"):
            return self.builtin["gemini"]
        if model.startswith("deepseek-"):
            return self.builtin["deepseek"]
        if _O_SERIES.match(model) or any(fnmatch.fnmatchcase(model, p) for p in _OPENAI_PATTERNS):
            return self.builtin["openai"]
        return None

    def upstream_key(self, provider: Provider) -> str | None:
        """The gateway's own key for `provider` (None: not configured)."""
        if provider.key_env is not None:
            return os.environ.get(provider.key_env) or None
        if provider.name in ("openai", "anthropic", "gemini", "deepseek"):
            return self.settings.vendor_key(provider.name)
        if provider.name == "vllm":
            return "EMPTY"  # vLLM accepts any key unless started with --api-key
        return None
