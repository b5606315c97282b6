"""The provider-cache stage: ask each vendor's own prompt cache to keep the stable prefix, when the
break-even says it pays (`breakeven.py`).

After the rewrite stage (whose layout says where the stable part ends; without it the same layout
is computed from the body as sent), per the tenant's `provider_cache` policy and the upstream:

- Anthropic (`anthropic_messages`): `cache_control` breakpoints (`anthropic.py`);
- OpenAI (`openai_chat`, `openai_responses` to OpenAI itself): `prompt_cache_key`, retention, and
  GPT-5.6+ breakpoints (`openai.py`); DeepSeek and other OpenAI-compatible upstreams cache by
  prefix on their own and get only the rewrite;
- Gemini: explicit CachedContent, shared by all replicas through the store (`gemini.py`).

Each decision is counted (`gateway_provider_cache_decisions_total{provider,decision}`) and put in
the usage record (`provider_cache`, `prompt_cache_key`, `cache_retention`, `storage_cost_usd`).
Decisions rest on what the vendors did with earlier writes of the same prefix family (`family.py`,
`outcomes.py`): `after()` records each request's writes and reads from its usage, and a family whose
writes are not read back stops writing (probing again now and then). The store calls on the request
path are small reads made together (statistics, outcomes and, for Gemini, the cache handle), bounded
by a short timeout; on failure the priors decide (fail-open).

`on_upstream_error` lets the upstream call retry once after a failure our edits caused: a Gemini
cache gone upstream (recreated), or a 400 about cache markers (sent again without them).
`purge` serves the admin purge of layer "provider".
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from gateway import metrics
from gateway.accounting.normalize import expected_dialect, normalize
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.pipeline import Hit, Stage
from gateway.provider_cache import gemini
from gateway.provider_cache.cache_api import CacheApi, VertexApi
from gateway.provider_cache.family import ensure_family
from gateway.provider_cache.outcomes import NONE, Evidence, Outcome, OutcomeStore, outcome_key
from gateway.provider_cache.stats import EMPTY, PrefixStats, StatsStore
from gateway.provider_cache.tables import CachePrices, min_tokens, prices_for
from gateway.provider_cache.tokens import TokenCounter, default_counter
from gateway.rewrite.layout import Layout
from gateway.rewrite.protocols import module_for
from gateway.stores.base import KVStore, StoreUnavailable
from gateway.upstream.client import UpstreamClients

log = logging.getLogger("gateway.provider_cache")

SCRATCH = "provider_cache"
_CACHE_WORDS = ("cache_control", "prompt_cache", "cachedcontent", "cached content", "cache")


def _text(body: Any) -> str:
    if isinstance(body, bytes | bytearray):
        return bytes(body[:4096]).decode("utf-8", "replace").lower()
    if isinstance(body, str):
        return body[:4096].lower()
    try:
        return orjson.dumps(body).decode()[:4096].lower()
    except TypeError:
        return str(body)[:4096].lower()


class ProviderCacheStage(Stage):
    name = "provider_cache"

    def __init__(self, settings: Any, store: KVStore, clients: UpstreamClients | None = None, *,
                 prices: Any = None, counter: TokenCounter | None = None, create_timeout_s: float = 10.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.store = store
        self._own_clients = clients is None
        self.clients = clients or UpstreamClients(settings)
        self.book = prices  # a gateway.accounting.pricing.PriceBook; default: the one the usage stage installs
        self.counter = counter or default_counter()
        store_timeout = float(getattr(settings, "store_timeout", 0.1) or 0.1)
        self.stats = StatsStore(store, timeout_s=store_timeout, clock=clock)
        self.outcomes = OutcomeStore(store, timeout_s=store_timeout)
        self.gemini = gemini.GeminiCaches(store, lambda: self.clients.session("gemini"), timeout_s=create_timeout_s,
                                          store_timeout_s=store_timeout, clock=clock)
        self._prices_ready = prices is not None and getattr(prices, "_map", None) is not None
        # The gateway's Vertex AI access tokens, set by the assembly when Vertex is configured: the purge
        # deletes the tenant's Vertex caches with them, each in its own location.
        self.vertex_token: Callable[[], Awaitable[str]] | None = None

    # ---- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        # The cost map file (~30 ms) is read off the loop. The tokenizer is not loaded here: most
        # requests never count tokens, so the first that does loads it (`counted`).
        try:
            await asyncio.to_thread(lambda: self._book().cost_map)
            self._prices_ready = True
        except Exception as exc:
            log.warning("price map unavailable; break-even uses list-price ratios", extra={"error": repr(exc)})

    async def stop(self) -> None:
        await self.stats.drain()
        if self._own_clients:
            await self.clients.close()

    def _book(self) -> Any:
        if self.book is not None:
            return self.book
        from gateway.accounting import pricing

        return pricing.default_book()

    @property
    def readiness(self) -> str:
        """This layer's word in /readyz: it serves from the start; the tokenizer's state is beside it."""
        return f"ready (tokenizer {self.counter.state})"

    async def counted(self) -> TokenCounter:
        """The token counter, its encoder loaded (in a worker thread, once) if it can be."""
        await self.counter.ensure()
        return self.counter

    def prices(self, provider: str, vendor: str, model: str) -> CachePrices:
        return prices_for(provider, vendor, model, self._book() if self._prices_ready else None)

    # ---- the request path ------------------------------------------------------------------------
    async def before(self, ctx: RequestContext) -> Hit | None:
        if ctx.policy is None or ctx.upstream_adapter is None or not ctx.upstream_body:
            return None
        if _cannot_reach(ctx.upstream_body, min_tokens(ctx.upstream_adapter.vendor, ctx.model)):
            ctx.record["provider_cache"] = {"provider": ctx.provider, "decision": "skip_short"}
            return None  # most chat requests: far too short for any vendor cache, so nothing to decide
        protocol = ctx.upstream_adapter.name
        plugin = ctx.vendor.provider_cache if ctx.vendor is not None else None
        lay = ctx.rewrite
        if not isinstance(lay, Layout):
            mod = module_for(protocol)
            own = getattr(plugin, "layout", None)  # a plug-in for a protocol the rewrite layer does not know
            if mod is None and own is None:
                return None
            lay = mod.layout(ctx.upstream_body) if mod is not None else own(ctx.upstream_body)  # type: ignore[misc]
            ctx.record.setdefault("prefix_hash", lay.prefix_hash)
        if plugin is not None and protocol in plugin.protocols and plugin.enabled(ctx):
            await plugin.decide(self, ctx, lay)
        return None

    def state(self, ctx: RequestContext) -> dict[str, Any]:
        """This stage's state for one request (read by its vendor plug-ins, `plugins.py`)."""
        state: dict[str, Any] = ctx.scratch.setdefault(SCRATCH, {})
        return state

    def _ids(self, ctx: RequestContext, lay: Layout) -> tuple[str, str | None]:
        def ident(h: str) -> str:
            return hashlib.sha256(f"{ctx.provider}\x1f{ctx.model}\x1f{h}".encode()).hexdigest()[:24]

        return ident(lay.prefix_hash), (ident(lay.conversation_hash) if lay.history else None)

    def evidence_key(self, ctx: RequestContext) -> str | None:
        family = ensure_family(ctx)
        learn = ctx.policy is None or ctx.policy.provider_cache.learn
        return outcome_key(ctx.tenant, ctx.provider, ctx.model, family) if family and learn else None

    async def read_stats(self, ctx: RequestContext, lay: Layout
                          ) -> tuple[str, str | None, PrefixStats, PrefixStats, Evidence]:
        """Re-use statistics (template, conversation) and the family's observed outcomes, in one round
        trip; the template's sighting is counted here, the conversation's once its marker is known."""
        tid, cid = self._ids(ctx, lay)
        okey = self.evidence_key(ctx)
        found, evidence = await asyncio.gather(self.stats.read(ctx.tenant, *([tid, cid] if cid else [tid])),
                                               self.outcomes.read(okey) if okey else _none())
        template, conversation = found[0], (found[1] if cid else EMPTY)
        self.stats.record(ctx.tenant, tid, template)
        state = ctx.scratch.setdefault(SCRATCH, {})
        state["outcome_key"] = okey
        if cid:
            state["conversation"] = (cid, conversation)
        return tid, cid, template, conversation, evidence

    def decided(self, ctx: RequestContext, provider: str, decision: str, record: dict[str, Any]) -> None:
        metrics.PROVIDER_CACHE_DECISIONS.labels(provider, decision).inc()
        ctx.record["provider_cache"] = {"provider": provider, "decision": decision, **record}

    def keep_original(self, ctx: RequestContext, body: dict[str, Any]) -> None:
        ctx.scratch.setdefault(SCRATCH, {}).setdefault("original", body)

    def gated(self, ctx: RequestContext, gate: str, kind: str = "short") -> None:
        """Remember the gate decision for `after()`, which records the outcome under it."""
        state = ctx.scratch.setdefault(SCRATCH, {})
        state["gate"], state["kind"] = gate, kind

    def conversation_seen(self, ctx: RequestContext, marker: int | None, shard: int | None = None) -> None:
        found = ctx.scratch.get(SCRATCH, {}).get("conversation")
        if found is not None:
            self.stats.record(ctx.tenant, found[0], found[1], marker=-1 if marker is None else marker, shard=shard)

    # ---- outcomes ------------------------------------------------------------------------------------
    async def after(self, ctx: RequestContext) -> None:
        """Record what the vendor did with this request's writes (from its usage) for its family."""
        state = ctx.scratch.get(SCRATCH)
        if not state or not state.get("outcome_key") or "gate" not in state:
            return
        if ctx.answer is None or ctx.answered_by != "upstream":
            return
        gate, kind = state["gate"], state.get("kind", "short")
        created = state.get("gemini_outcome")
        plugin = ctx.vendor.provider_cache if ctx.vendor is not None else None
        if plugin is not None and plugin.writes_are_objects:  # a write is a cache object created, a read one used
            outcome = Outcome(created == "create", created in ("reuse", "extend"), kind, gate)
        else:
            usage = normalize(expected_dialect(ctx), ctx.answer.usage_raw or {})
            outcome = Outcome(usage.cache_creation_input_tokens > 0, usage.cached_input_tokens > 0,
                              "long" if usage.cache_write_long_tokens else kind, gate,
                              usage.cache_creation_input_tokens, usage.cached_input_tokens)
        await self.outcomes.record(state["outcome_key"], outcome)

    def use_gemini(self, ctx: RequestContext, prefix: gemini.Prefix, handle: dict[str, Any],
                   api: CacheApi | None = None) -> None:
        state = ctx.scratch.setdefault(SCRATCH, {})
        state.setdefault("gemini", {"prefix": prefix, "body": ctx.upstream_body, "path": ctx.upstream_path,
                                    "api": api})
        original = state["gemini"]
        ctx.upstream_body = gemini.reference(original["body"], prefix, handle["name"])
        if not isinstance(api, VertexApi):  # Vertex AI's v1 serves context caches; the Gemini API's v1beta
            ctx.upstream_path = gemini.v1beta_path(original["path"])

    # ---- recovery --------------------------------------------------------------------------------
    async def on_upstream_error(self, ctx: RequestContext, status: int, body: Any) -> bool:
        """Called once by the upstream call after an error status, before anything reached the
        client. True when `ctx.upstream_body` was rewritten and the request should be sent again."""
        state = ctx.scratch.get(SCRATCH)
        if not state or state.get("retried"):
            return False
        text = _text(body)
        g = state.get("gemini")
        gone = status in (403, 404) or (status == 400 and ("cachedcontent" in text or "cached content" in text
                                                            or ("invalid" in text and "state" in text)))
        if g is not None and gone:
            state["retried"] = True
            prefix: gemini.Prefix = g["prefix"]
            await self.gemini.forget(ctx.tenant, prefix.cache_id)
            ctx.upstream_body, ctx.upstream_path = g["body"], g["path"]
            api = g.get("api")
            pol = ctx.policy.provider_cache.gemini if ctx.policy is not None else None
            handle: dict[str, Any] | None = None
            if api is not None and pol is not None:
                try:
                    model = ctx.vendor.upstream_model(ctx.model) if ctx.vendor is not None else ctx.model
                    handle, _ = await self.gemini.create(ctx.tenant, prefix, model, "", "", pol.ttl, api=api)
                except StoreUnavailable:
                    handle = None
            if handle is not None:
                self.use_gemini(ctx, prefix, handle, api)
            decision = "recreate" if handle is not None else "recover_plain"
            metrics.PROVIDER_CACHE_DECISIONS.labels(ctx.provider, decision).inc()
            ctx.record.setdefault("provider_cache", {})["recovered"] = {"status": status, "outcome": decision}
            return True
        original = state.get("original")
        if original is not None and status == 400 and any(w in text for w in _CACHE_WORDS):
            state["retried"] = True
            ctx.upstream_body = original
            provider = ctx.record.get("provider_cache", {}).get("provider", ctx.provider)
            metrics.PROVIDER_CACHE_DECISIONS.labels(provider, "recover_plain").inc()
            ctx.record.setdefault("provider_cache", {})["recovered"] = {"status": status, "outcome": "recover_plain"}
            return True
        return False

    # ---- admin -----------------------------------------------------------------------------------
    async def purge(self, tenant: str, version: str | None = None) -> int:
        """Delete the tenant's gateway-made provider caches (Gemini CachedContents) upstream and
        their handles; returns how many. Provider caches are not versioned: `version` is ignored."""
        key = self.settings.vendor_key("gemini") if hasattr(self.settings, "vendor_key") else None
        try:
            return await self.gemini.purge(tenant, key, self.vertex_token)
        except StoreUnavailable as exc:
            raise GatewayError(503, "The store is unavailable; provider caches were not purged.") from exc


_MEDIA = (b'"image', b'"file', b'"audio', b'"input_image', b'"input_file', b'"inline_data', b'"inlineData',
          b'"fileData', b'"document')


async def _none() -> Evidence:
    return NONE


def _cannot_reach(body: dict[str, Any], minimum: int) -> bool:
    """True when the prompt is certainly under `minimum` tokens: its JSON is shorter than that many
    bytes (a token is at least one character, and each message's JSON framing outweighs its framing
    tokens) and carries no media (an image's tokens do not show in its URL's length)."""
    raw = orjson.dumps(body)
    return len(raw) < minimum and not any(marker in raw for marker in _MEDIA)
