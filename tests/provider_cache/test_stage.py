"""The provider-cache stage on contexts built by the real adapter stage, against the emulators and
the embedded store / a real redis-server: decisions in metrics and the usage record, fail-open on a
dead store, Gemini create → reference → recover after the cache vanished → purge."""

from __future__ import annotations

import time
from typing import Any

import pytest

from gateway import metrics
from gateway.adapt import adapt
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.policy.models import TenantPolicy
from gateway.protocols import get_adapter
from gateway.provider_cache.stage import ProviderCacheStage
from gateway.provider_cache.tokens import TokenCounter
from gateway.providers import ProviderTable
from gateway.rewrite.stage import RewriteStage
from gateway.stores import KVStore, open_store
from gateway_dev.emulators import EmulatorSet

from .conftest import free_port_url

SYSTEM = "You answer questions about the Acme handbook. Current time: 2026-11-05T10:23:45Z. " + " ".join(
    f"Rule {i}: items may be returned within {i + 10} days with a receipt." for i in range(220))


def settings_for(emu: EmulatorSet) -> Settings:
    return Settings(openai_api_key="sk-gw", anthropic_api_key="sk-ant-gw", gemini_api_key="AIza-gw",
                    openai_base_url=emu.openai_base_url, anthropic_base_url=emu.anthropic_base_url,
                    gemini_base_url=emu.gemini_base_url)


def ctx_for(settings: Settings, tenant: str, body: dict[str, Any], protocol: str, path_model: str | None = None,
            **provider_cache: Any) -> RequestContext:
    ctx = RequestContext(request_id="gw-test", adapter=get_adapter(protocol), headers={}, query={}, body=body,
                         path_model=path_model)
    ctx.tenant = tenant
    ctx.policy = TenantPolicy.model_validate({"tenant": tenant, "api_keys": ["sha256:" + "0" * 64],
                                              "prompt_rewrite": {"enabled": True},
                                              "provider_cache": provider_cache})
    adapt(ctx, ProviderTable(settings))
    return ctx


EXPECTS_REUSE = {"enabled": True, "min_expected_reuses": 10}  # a tenant that knows its prefix is re-used


def decisions(provider: str, decision: str) -> float:
    return metrics.PROVIDER_CACHE_DECISIONS.labels(provider, decision)._value.get()


def anthropic_body() -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 50, "system": SYSTEM,
            "messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                         {"role": "user", "content": "q2"}]}


def gemini_body() -> dict[str, Any]:
    return {"systemInstruction": {"parts": [{"text": SYSTEM}]},
            "contents": [{"role": "user", "parts": [{"text": "What is rule 7?"}]}]}


async def run(stage: ProviderCacheStage, ctx: RequestContext) -> None:
    await RewriteStage().before(ctx)
    await stage.before(ctx)


async def test_anthropic_markers_counted_and_recorded(emu: EmulatorSet, kv: KVStore, tenant: str) -> None:
    settings = settings_for(emu)
    stage = ProviderCacheStage(settings, kv)
    assert stage.counter.load()  # what the first request that counts tokens does (list-price ratios here)
    try:
        before = decisions("anthropic", "cache_5m")
        ctx = ctx_for(settings, tenant, anthropic_body(), "anthropic_messages")
        await run(stage, ctx)
        assert decisions("anthropic", "cache_5m") == before + 1
        rec = ctx.record["provider_cache"]
        assert rec["provider"] == "anthropic" and rec["decision"] == "cache_5m"
        assert [m["at"] for m in rec["markers"]] == ["system", "turn"]
        assert ctx.record["cache_retention"] == "5m"
        assert ctx.upstream_body["messages"][1]["content"][0]["cache_control"] == {"type": "ephemeral"}
        assert ctx.upstream_body["messages"][-1] == {"role": "user", "content": "q2"}
    finally:
        await stage.stop()


async def test_openai_key_recorded(emu: EmulatorSet, kv: KVStore, tenant: str) -> None:
    settings = settings_for(emu)
    stage = ProviderCacheStage(settings, kv)
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "q"}]}
    ctx = ctx_for(settings, tenant, body, "openai_chat", openai={"retention": "in_memory"})
    await run(stage, ctx)
    key = ctx.upstream_body["prompt_cache_key"]
    assert key.startswith("gw-") and ctx.record["prompt_cache_key"] == key
    assert ctx.upstream_body["prompt_cache_retention"] == "in_memory" == ctx.record["cache_retention"]
    assert ctx.record["provider_cache"]["decision"] == "key"
    await stage.stop()


async def test_dead_store_fails_open(emu: EmulatorSet, tenant: str) -> None:
    settings = settings_for(emu)
    dead = open_store(Settings(redis_url=free_port_url(), store_timeout=0.05))
    stage = ProviderCacheStage(settings, dead)
    ctx = ctx_for(settings, tenant, anthropic_body(), "anthropic_messages")
    assert stage.counter.load()  # the tokenizer's one-time load is not what this bound is about
    started = time.perf_counter()
    await run(stage, ctx)
    assert time.perf_counter() - started < 1.0
    assert ctx.record["provider_cache"]["decision"] == "cache_5m"  # decided from the priors
    gctx = ctx_for(settings, tenant, gemini_body(), "gemini", "gemini-2.5-flash", gemini=EXPECTS_REUSE)
    await run(stage, gctx)
    assert "cachedContent" not in gctx.upstream_body  # no shared lock, so no creation: plain request
    await stage.stop()
    await dead.close()


async def test_gemini_create_reference_recover_purge(emu: EmulatorSet, kv: KVStore, tenant: str) -> None:
    settings = settings_for(emu)
    stage = ProviderCacheStage(settings, kv)
    assert stage.counter.load()  # what the first request that counts tokens does (list-price ratios here)
    try:
        ctx = ctx_for(settings, tenant, gemini_body(), "gemini", "gemini-2.5-flash", gemini=EXPECTS_REUSE)
        await run(stage, ctx)
        rec = ctx.record["provider_cache"]
        assert rec["decision"] == "create" and emu.calls("gemini.cachedContents.create") == 1
        assert ctx.upstream_body["cachedContent"] == rec["cache_name"]
        assert "systemInstruction" not in ctx.upstream_body
        assert ctx.upstream_path.startswith("/v1beta/models/gemini-2.5-flash:")
        assert ctx.record["storage_cost_usd"] > 0 and ctx.record["provider_cache"]["breakeven"]["cache"]
        # the next request references it without creating
        ctx2 = ctx_for(settings, tenant, gemini_body(), "gemini", "gemini-2.5-flash", gemini=EXPECTS_REUSE)
        await run(stage, ctx2)
        assert ctx2.record["provider_cache"]["decision"] == "reuse"
        assert ctx2.upstream_body["cachedContent"] == rec["cache_name"]
        # the cache vanished upstream (expired on the vendor's clock): recreated once, request retried
        emu.vendors.gemini.caches.clear()
        assert await stage.on_upstream_error(ctx2, 403, b'{"error": {"code": 403, "status": "PERMISSION_DENIED"}}')
        assert emu.calls("gemini.cachedContents.create") == 2
        assert ctx2.upstream_body["cachedContent"] != rec["cache_name"]
        assert not await stage.on_upstream_error(ctx2, 403, b"{}"), "only once"
        # purge: deleted upstream and forgotten
        assert await stage.purge(tenant, None) == 1
        assert emu.vendors.gemini.caches.list("AIza-gw") == []
        ctx3 = ctx_for(settings, tenant, gemini_body(), "gemini", "gemini-2.5-flash", gemini=EXPECTS_REUSE)
        await run(stage, ctx3)
        assert ctx3.record["provider_cache"]["decision"] == "create"
    finally:
        await stage.stop()


async def test_a_400_about_our_markers_retries_without_them(emu: EmulatorSet, kv: KVStore, tenant: str) -> None:
    settings = settings_for(emu)
    stage = ProviderCacheStage(settings, kv)
    ctx = ctx_for(settings, tenant, anthropic_body(), "anthropic_messages")
    await run(stage, ctx)
    rewritten = ctx.scratch["provider_cache"]["original"]
    assert await stage.on_upstream_error(ctx, 400, {"error": {"message": "A maximum of 4 blocks with cache_control"}})
    assert ctx.upstream_body is rewritten
    assert not await stage.on_upstream_error(ctx, 400, b"cache_control"), "only once"
    other = ctx_for(settings, tenant, anthropic_body(), "anthropic_messages")
    await run(stage, other)
    assert not await stage.on_upstream_error(other, 400, b"max_tokens: Field required"), "not ours"
    await stage.stop()


@pytest.mark.parametrize("protocol", ["openai_chat"])
async def test_vllm_and_deepseek_get_no_provider_fields(emu: EmulatorSet, kv: KVStore, tenant: str,
                                                        protocol: str) -> None:
    settings = Settings(deepseek_api_key="sk-ds", deepseek_base_url=emu.deepseek_base_url)
    stage = ProviderCacheStage(settings, kv)
    body = {"model": "deepseek-chat", "messages": [{"role": "system", "content": SYSTEM},
                                                   {"role": "user", "content": "q"}]}
    ctx = ctx_for(settings, tenant, body, protocol)
    await run(stage, ctx)
    assert "prompt_cache_key" not in ctx.upstream_body and "provider_cache" not in ctx.record
    assert "rewrite" in ctx.record
    await stage.stop()


async def test_gemini_creation_waits_until_observed_reuse_pays(emu: EmulatorSet, kv: KVStore, tenant: str) -> None:
    now = [emu.clock.now()]
    settings = settings_for(emu)
    stage = ProviderCacheStage(settings, kv, clock=lambda: now[0])
    seen = []
    for _ in range(7):
        ctx = ctx_for(settings, tenant, gemini_body(), "gemini", "gemini-2.5-flash", gemini={"enabled": True})
        await run(stage, ctx)
        await stage.stats.drain()
        seen.append(ctx.record["provider_cache"]["decision"])
        now[0] += 30.0  # one request every 30 s
    # an hour of storage costs ~3.3 inputs: not worth it on the prior of 2 reuses, worth it once
    # four sightings 30 s apart were seen
    assert seen[:4] == ["skip_breakeven"] * 4
    assert seen[4] == "create" and seen[5:] == ["reuse", "reuse"]
    assert emu.calls("gemini.cachedContents.create") == 1
    await stage.stop()


async def test_the_tokenizer_loads_on_the_first_request_that_counts(emu: EmulatorSet, kv: KVStore,
                                                                    tenant: str) -> None:
    settings = settings_for(emu)
    stage = ProviderCacheStage(settings, kv, counter=TokenCounter())
    await stage.start()
    try:
        assert stage.counter.state == "on first use" and stage.readiness == "ready (tokenizer on first use)"
        short = ctx_for(settings, tenant, {"model": "claude-sonnet-4-5", "max_tokens": 5,
                                           "messages": [{"role": "user", "content": "hi"}]}, "anthropic_messages")
        await run(stage, short)
        assert short.record["provider_cache"]["decision"] == "skip_short"
        body = {"model": "gpt-4o", "messages": [{"role": "system", "content": SYSTEM},
                                                {"role": "user", "content": "q"}]}
        keyed = ctx_for(settings, tenant, body, "openai_chat")
        await run(stage, keyed)  # a prompt cache key needs no token count
        assert keyed.record["provider_cache"]["decision"] == "key"
        assert stage.counter.state == "on first use"
        ctx = ctx_for(settings, tenant, anthropic_body(), "anthropic_messages")
        await run(stage, ctx)
        assert stage.counter.exact and stage.readiness == "ready (tokenizer loaded)"
        assert ctx.record["provider_cache"]["decision"] == "cache_5m"
        assert [m["at"] for m in ctx.record["provider_cache"]["markers"]] == ["system", "turn"]
    finally:
        await stage.stop()
