"""What the gateway knows about one upstream vendor, declared in one place.

A `VendorSpec` holds every vendor fact the layers need: which model names it serves, where it lives and
which environment names configure it, how a request is signed for it, which protocols it speaks and at
which paths, how its usage object reads, and its plug-ins for the rewrite, provider-cache and lint
layers. Each vendor declares its spec in its own module of `gateway/vendors/`; `registry.py` lists them.
The layers look the resolved spec up on the request context (`ctx.vendor`) instead of branching on names.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gateway.signing.base import Signer, StaticKey

if TYPE_CHECKING:
    from gateway.accounting.normalize import NormalizedUsage
    from gateway.context import RequestContext
    from gateway.pipeline import Hit
    from gateway.rewrite.layout import Layout


SignerFactory = Callable[[Any], Signer]  # settings → the signer (SigV4 and OAuth need region, credentials)


def static_key(header: str = "authorization", scheme: str = "Bearer") -> SignerFactory:
    signer = StaticKey(header, scheme)
    return lambda settings: signer


# ---- per-layer plug-ins ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RewritePlugin:
    """How the rewrite layer treats this vendor: where the context block goes ("system" where the
    vendor caches across a mid-conversation system message, "user" elsewhere)."""

    context_role: str = "user"


class ProviderCachePlugin(Protocol):
    """The vendor's own prompt cache, driven by the provider-cache stage (`gateway/provider_cache`)."""

    protocols: frozenset[str]  # upstream protocols the plug-in edits
    # True when a write is a cache object the gateway made (Gemini CachedContent), not usage counts
    writes_are_objects: bool

    def enabled(self, ctx: RequestContext) -> bool: ...

    async def decide(self, stage: Any, ctx: RequestContext, lay: Layout) -> Hit | None: ...


@dataclass(frozen=True, slots=True)
class LintHints:
    """What the offline prompt linter needs per protocol the vendor owns: the top-level fields it renders
    ahead of the conversation, in order, and the model priced when the body names none."""

    prefix_fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    default_model: str = ""


@dataclass(frozen=True, slots=True)
class UsageDialect:
    """A vendor's own usage object: its name in the usage record and the reader into neutral counts."""

    name: str
    read: Callable[[Mapping[str, Any]], NormalizedUsage]


NativePath = str | Callable[["RequestContext"], str]


# ---- the spec -------------------------------------------------------------------------------------


_SERVES_MAX = 4096


@dataclass(frozen=True)
class VendorSpec:
    name: str  # the provider name in metrics and usage records
    title: str  # for messages: "OpenAI", "Gemini"
    family: str  # the wire family: openai | anthropic | gemini (prices, minimum cacheable lengths)
    speaks: tuple[str, ...]  # upstream protocols, preferred first (an adapter name of gateway/protocols)
    native_paths: Mapping[str, NativePath]  # protocol → path below the base URL for a same-protocol request
    models: tuple[str, ...] = ()  # fnmatch patterns of the model names it serves
    model_regex: str | None = None  # one more pattern as a regular expression (OpenAI's o-series)
    route_prefix: str | None = None  # `vllm/`: names with it go here, and it is stripped upstream
    owns_clients: tuple[str, ...] = ()  # client protocols always served here whatever the model
    key_env: str | None = None  # environment name of the gateway's key
    base_url_env: str | None = None  # environment name of the base URL
    default_base_url: str = ""  # as the vendor's SDK takes it; "" where routing sets it (a pool)
    default_key: str | None = None  # a key to send when none is configured (vLLM takes any)
    signer: SignerFactory = field(default=static_key())
    default_headers: Mapping[str, str] = field(default_factory=dict)  # e.g. anthropic-version
    error_shape: str = "openai"  # the error dialect of its answers (gateway/errors.py::ERROR_SHAPES)
    usage: UsageDialect | None = None  # None: the upstream protocol's own dialect
    price_prefix: str | None = None  # how litellm's cost map names its models (`mistral/<model>`), when not bare
    cache_objects: bool = False  # requests may name the vendor's cache objects (Gemini cachedContents)
    model_in_path: bool = False  # the model goes into the URL path (Gemini): it must be path-safe
    pooled: bool = False  # served by the replica pool (routing sets the base URL; failover applies)
    # Why a stored answer could not stand in for this vendor's reply to `body`, beyond what the client
    # protocol's adapter already says (`ProtocolAdapter.unreplayable`); None when it can.
    unreplayable: Callable[[dict[str, Any]], str | None] | None = None
    rewrite: RewritePlugin | None = RewritePlugin()  # None: the rewrite layer leaves this vendor alone
    provider_cache: ProviderCachePlugin | None = None
    lint: LintHints = LintHints()
    owns_path: Callable[[str], bool] | None = None  # the gateway paths that answer in its error shape
    # Called last by the protocol adapter stage, with the settings: where a request goes when that depends on
    # more than the model (a cloud platform's region or location, a deployment path), and a clear refusal when
    # the vendor is not configured.
    prepare: Callable[[RequestContext, Any], None] | None = None
    configured: bool = False  # declared in the config file (`upstreams:`), not built in

    def serves(self, model: str) -> bool:
        """True when `model` is one of this vendor's names (patterns only: no pool, no config)."""
        # Remembered on the spec: the answer depends on the frozen spec alone, and matching every
        # vendor's patterns in turn was a few percent of a cache hit's CPU.
        memo: dict[str, bool] = self.__dict__.setdefault("_serves_memo", {})
        known = memo.get(model)
        if known is None:
            known = self._serves(model)
            if len(memo) >= _SERVES_MAX:  # model names come from callers: bounded
                memo.clear()
            memo[model] = known
        return known

    def _serves(self, model: str) -> bool:
        if self.route_prefix is not None and model.startswith(self.route_prefix):
            return True
        if any(fnmatch.fnmatchcase(model, pattern) for pattern in self.models):
            return True
        return self.model_regex is not None and re.match(self.model_regex, model) is not None

    def upstream_protocol(self, client: str) -> str:
        """The protocol to speak upstream for a client of protocol `client`: the client's own when the
        vendor speaks it, else the vendor's first (the request is then translated)."""
        return client if client in self.speaks else self.speaks[0]

    def upstream_model(self, model: str) -> str:
        if self.route_prefix is not None and model.startswith(self.route_prefix):
            return model[len(self.route_prefix):]
        return model

    def native_path(self, protocol: str, ctx: RequestContext) -> str:
        path = self.native_paths[protocol]
        return path if isinstance(path, str) else path(ctx)

    def settings_field(self, kind: str) -> str:
        """The settings (and config file) field of this vendor's `api_key` or `base_url`."""
        return f"{self.name}_{kind}"
