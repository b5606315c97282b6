"""Each vendor's own prompt cache as a plug-in of the provider-cache stage, declared in its spec.

- Anthropic (`anthropic_messages`): `cache_control` breakpoints (`anthropic.py`);
- OpenAI (`openai_chat`, `openai_responses`): `prompt_cache_key`, retention and GPT-5.6+ breakpoints
  (`openai.py`); DeepSeek and other OpenAI-compatible upstreams cache by prefix on their own and have none;
- Gemini: explicit CachedContent, shared by all replicas through the store (`gemini.py`).

`decide(stage, ctx, lay)` reads the stage's statistics and outcomes and edits `ctx.upstream_body`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from gateway import metrics
from gateway.provider_cache import anthropic, gemini, openai
from gateway.provider_cache.cache_api import CacheApi, GeminiApi
from gateway.provider_cache.outcomes import NONE, Evidence
from gateway.provider_cache.tables import gpt_breakpoints, min_tokens

if TYPE_CHECKING:
    from gateway.context import RequestContext
    from gateway.provider_cache.stage import ProviderCacheStage
    from gateway.rewrite.layout import Layout


async def _none() -> Evidence:
    return NONE


class AnthropicCache:
    """`cache_control` breakpoints. The hooks (`provider`, `policy`, `minimum`, `view`, `apply`) let a vendor
    whose cache follows Anthropic's rules on another wire shape (Bedrock's cachePoint blocks) reuse it."""

    protocols = frozenset({"anthropic_messages"})
    writes_are_objects = False
    provider = "anthropic"

    def policy(self, ctx: RequestContext) -> Any:
        return ctx.policy.provider_cache.anthropic  # type: ignore[union-attr]

    def enabled(self, ctx: RequestContext) -> bool:
        return ctx.policy is not None and self.policy(ctx).enabled

    def minimum(self, model: str) -> int:
        return min_tokens("anthropic", model)

    def view(self, body: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The body as Anthropic's placement reads it, and what `apply` needs to map markers back."""
        return body, None

    def apply(self, ctx: RequestContext, original: dict[str, Any], view: dict[str, Any], placed: dict[str, Any],
              where: Any) -> dict[str, Any]:
        return placed

    async def decide(self, stage: ProviderCacheStage, ctx: RequestContext, lay: Layout) -> None:
        _, _, template, conversation, evidence = await stage.read_stats(ctx, lay)
        gate = evidence.gate()
        original = ctx.upstream_body
        view, where = self.view(original)
        minimum = self.minimum(ctx.model)
        provider = self.provider
        if gate == "skip_unread" and view.get("cache_control") is None:
            stage.conversation_seen(ctx, None)
            stage.gated(ctx, gate)
            stage.decided(ctx, provider, "skip_unread", {"evidence": evidence.as_record(), "min_tokens": minimum})
            return
        placed, plan = anthropic.place(view, lay.stable_end, minimum, self.policy(ctx).ttl,
                                       stage.prices(ctx.provider, "anthropic", ctx.model), template, conversation,
                                       await stage.counted(), evidence)
        body = self.apply(ctx, original, view, placed, where)
        if body is not original:
            stage.keep_original(ctx, original)
            ctx.upstream_body = body
        ttls = sorted({m["ttl"] for m in plan.markers})
        if ttls:
            ctx.record["cache_retention"] = ttls[0] if len(ttls) == 1 else "+".join(ttls)
        turn = next((m["block"] for m in plan.markers if m["at"] == "turn"), None)
        stage.conversation_seen(ctx, turn)
        if plan.markers and not plan.client_markers:
            stage.gated(ctx, gate, "long" if ttls == ["1h"] else "short")
        record = plan.as_record()
        record["evidence"] = evidence.as_record()
        record["gate"] = gate
        stage.decided(ctx, provider, plan.decision, record)


class OpenAICache:
    protocols = frozenset({"openai_chat", "openai_responses"})
    writes_are_objects = False

    def enabled(self, ctx: RequestContext) -> bool:
        return ctx.policy is not None

    async def decide(self, stage: ProviderCacheStage, ctx: RequestContext, lay: Layout) -> None:
        protocol = ctx.upstream_adapter.name if ctx.upstream_adapter is not None else ""
        pol = ctx.policy.provider_cache.openai  # type: ignore[union-attr]
        breakpoints = pol.breakpoints == "auto" and gpt_breakpoints(ctx.model)
        if pol.prompt_cache_key == "off" and pol.retention == "unset" and not breakpoints:
            return  # nothing to decide: no statistics to read
        _, _, template, conversation, evidence = await stage.read_stats(ctx, lay)
        original = ctx.upstream_body
        affinity = ctx.session or lay.conversation_hash
        body, rec = openai.set_key_and_retention(original, ctx.model, ctx.tenant, lay.prefix_hash, affinity, template,
                                                 pol.prompt_cache_key, pol.retention, conversation)
        gate = evidence.gate() if breakpoints else "write"
        if not breakpoints:
            bp = None
        elif gate == "skip_unread":
            # GPT-5.6+ write at the latest message on their own (implicit mode): explicit mode without
            # a breakpoint writes nothing, which is what a family whose writes are never read needs.
            body, bp = openai.stop_writing(body)
        else:
            body, bp = openai.place_breakpoints(body, protocol, ctx.model, lay.stable_end,
                                                stage.prices("openai", "openai", ctx.model), template, conversation,
                                                await stage.counted(), evidence)
        stage.conversation_seen(ctx, next((m["turn"] for m in (bp or {}).get("markers", []) if m["at"] == "turn"),
                                          None), rec.get("shard"))
        if bp is not None and bp.get("decision") != "skip_client_options":
            stage.gated(ctx, gate)
            bp["evidence"], bp["gate"] = evidence.as_record(), gate
        if body is not original:
            stage.keep_original(ctx, original)
            ctx.upstream_body = body
        if rec.get("prompt_cache_key"):
            ctx.record["prompt_cache_key"] = rec["prompt_cache_key"]
        if rec.get("retention"):
            ctx.record["cache_retention"] = rec["retention"]
        decision = {"gateway": "key", "client": "client_key"}.get(rec["key"], "key_off")
        if bp is not None:
            rec["breakpoints"] = bp
            metrics.PROVIDER_CACHE_DECISIONS.labels("openai", bp["decision"]).inc()
        stage.decided(ctx, "openai", decision, rec)


class GeminiCache:
    """Explicit CachedContent objects. `api` says where a cache lives and how to reach it: the Gemini API with
    the upstream key, or (Vertex AI's plug-in) one Vertex location with the gateway's access token."""

    protocols = frozenset({"gemini"})
    writes_are_objects = True  # a write is a CachedContent the gateway created, a read one it used
    provider = "gemini"

    def enabled(self, ctx: RequestContext) -> bool:
        return ctx.policy is not None and ctx.policy.provider_cache.gemini.enabled

    def api(self, ctx: RequestContext) -> CacheApi | None:
        return GeminiApi(ctx.upstream_base_url, ctx.upstream_key) if ctx.upstream_key else None

    async def decide(self, stage: ProviderCacheStage, ctx: RequestContext, lay: Layout) -> None:
        body = ctx.upstream_body
        provider = self.provider
        if body.get("cachedContent"):
            stage.decided(ctx, provider, "client_cache", {})
            return
        api = self.api(ctx)
        if api is None:
            stage.decided(ctx, provider, "skip_no_key", {})
            return
        pol = ctx.policy.provider_cache.gemini  # type: ignore[union-attr]
        model = ctx.vendor.upstream_model(ctx.model) if ctx.vendor is not None else ctx.model  # `vertex_ai/` off
        minimum = min_tokens("gemini", model)
        prefix, tokens = gemini.choose_prefix(body, model, api.scope, lay.stable_end, minimum, await stage.counted())
        if prefix is None:
            stage.decided(ctx, provider, "skip_min", {"prefix_tokens": tokens, "min_tokens": minimum})
            return
        okey = stage.evidence_key(ctx)
        stage.state(ctx)["outcome_key"] = okey
        handle, found, evidence = await asyncio.gather(stage.gemini.handle(ctx.tenant, prefix),
                                                       stage.stats.read(ctx.tenant, prefix.cache_id),
                                                       stage.outcomes.read(okey) if okey else _none())
        stats = found[0]
        stage.stats.record(ctx.tenant, prefix.cache_id, stats)
        prices = stage.prices(ctx.provider, "gemini", ctx.model)
        gate = evidence.gate()
        rec: dict[str, Any] = {"prefix_tokens": prefix.tokens, "min_tokens": minimum, "gate": gate,
                               "leading_contents": prefix.leading, "stats": stats.as_record(),
                               "evidence": evidence.as_record()}
        decision = "reuse"
        storage_usd = 0.0
        if handle is not None:
            handle, hours = await stage.gemini.extend(ctx.tenant, prefix, handle, "", pol.ttl, api=api)
            if hours:
                decision = "extend"
                storage_usd = handle["tokens"] * hours * prices.storage_hour if handle else 0.0
        if handle is None:
            # A probe's second half creates nothing: reads of a CachedContent need no marker, so
            # the first half's cache shows by itself whether it is used.
            if gate in ("skip_unread", "probe2"):
                stage.gated(ctx, gate)
                stage.decided(ctx, provider, "skip_unread", rec)
                return
            observed = evidence.observed_reuses("short")
            d = stage.gemini.break_even(prefix, prices, stats, pol.ttl, pol.min_expected_reuses, observed)
            rec["breakeven"] = d.as_record()
            if not d.cache:
                stage.decided(ctx, provider, "skip_breakeven", rec)
                return
            if ctx.no_store:
                stage.decided(ctx, provider, "skip_no_store", rec)
                return
            handle, outcome = await stage.gemini.create(ctx.tenant, prefix, model, "", "", pol.ttl, api=api)
            if handle is None:
                stage.decided(ctx, provider, "skip_" + outcome, rec)
                return
            decision = "create" if outcome == "created" else "reuse"
            if outcome == "created":
                # Creation bills the cached tokens at the input price, then storage for the TTL.
                storage_usd = handle["tokens"] * (prices.storage_hour * (handle["expire"] - handle["created"]) / 3600.0
                                                  + prices.input)
        stage.gated(ctx, gate)
        stage.state(ctx)["gemini_outcome"] = decision
        stage.use_gemini(ctx, prefix, handle, api)
        rec["cache_name"] = handle["name"]
        if storage_usd:
            ctx.record["storage_cost_usd"] = ctx.record.get("storage_cost_usd", 0.0) + storage_usd
            ctx.record["provider_cache_storage_usd"] = storage_usd
        stage.decided(ctx, provider, decision, rec)


ANTHROPIC_CACHE = AnthropicCache()
OPENAI_CACHE = OpenAICache()
GEMINI_CACHE = GeminiCache()
