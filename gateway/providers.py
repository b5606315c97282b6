"""Which upstream serves a model, where it lives, and which credential it gets.

Routing by name follows the contract: a `vllm/` prefix or a name the vLLM pool serves goes to the
pool; configured OpenAI-compatible upstreams by their patterns; then the built-in vendors' patterns in
the registry's order (`gateway/vendors/registry.py`). Native Anthropic and Gemini requests always go
to their own vendor (their specs own those client protocols).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from gateway.config import Settings
from gateway.vendors import compatible, registry
from gateway.vendors.spec import Signer, VendorSpec


@dataclass(frozen=True, slots=True)
class Provider:
    """A vendor spec bound to this gateway's settings: its base URL and signer."""

    spec: VendorSpec
    base_url: str  # as the vendor's SDK takes it (OpenAI-compatible ones include /v1); "" for the vLLM pool
    signer: Signer

    @property
    def name(self) -> str:
        return self.spec.name


class ProviderTable:
    """Resolves model names; `pool_serves` asks the vLLM pool (None when there is no pool)."""

    def __init__(self, settings: Settings, pool_serves: Callable[[str], bool] | None = None,
                 vendors: tuple[VendorSpec, ...] = registry.BUILTIN) -> None:
        self.settings = settings
        self.pool_serves = pool_serves
        self.builtin = {spec.name: self._bind(spec) for spec in vendors}
        self.pool = next((p for p in self.builtin.values() if p.spec.pooled), None)
        self.configured = [self._bind(compatible.spec_for(up)) for up in settings.upstreams]
        self._named = [p for p in self.builtin.values() if not p.spec.pooled]
        self._owners = {protocol: p for p in self.builtin.values() for protocol in p.spec.owns_clients}
        # `bedrock/…`, `vertex_ai/…`, `azure/…` name their platform through every client protocol
        self._prefixed = [p for p in self._named if p.spec.route_prefix is not None]

    def _bind(self, spec: VendorSpec) -> Provider:
        configured = None if spec.configured or spec.pooled else self.settings.base_urls.get(spec.name)
        return Provider(spec, (configured or spec.default_base_url).rstrip("/"), spec.signer(self.settings))

    def get(self, name: str) -> Provider | None:
        return self.builtin.get(name) or next((p for p in self.configured if p.name == name), None)

    def for_model(self, model: str, client_protocol: str) -> Provider | None:
        """The provider for `model` asked through the `client_protocol` (None: unknown model)."""
        prefixed = next((p for p in self._prefixed if model.startswith(p.spec.route_prefix or "\0")), None)
        if prefixed is not None:
            return prefixed  # a protocol it cannot be translated to is refused by the translator (400)
        owner = self._owners.get(client_protocol)
        if owner is not None:
            return owner
        pool = self.pool
        if pool is not None and pool.spec.route_prefix is not None and model.startswith(pool.spec.route_prefix):
            return pool if self.pool_serves is not None else None
        for provider in self.configured:
            if provider.spec.serves(model):
                return provider
        if pool is not None and self.pool_serves is not None and self.pool_serves(model):
            return pool
        return next((p for p in self._named if p.spec.serves(model)), None)

    def upstream_key(self, provider: Provider) -> str | None:
        """The gateway's own key for `provider` (None: not configured)."""
        spec = provider.spec
        if spec.configured:
            return (os.environ.get(spec.key_env) or None) if spec.key_env else None
        return self.settings.vendor_key(spec.name) or spec.default_key
