"""The rewrite stage on contexts built by the real protocol adapter stage (`adapt`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gateway.adapt import adapt
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.policy.models import PromptRewritePolicy, TenantPolicy
from gateway.protocols import get_adapter
from gateway.providers import ProviderTable
from gateway.rewrite.stage import RewriteStage

from ._bodies import anthropic, chat, gemini

SETTINGS = Settings(openai_api_key="sk-gw", anthropic_api_key="sk-ant-gw", gemini_api_key="AIza-gw",
                    deepseek_api_key="sk-ds")


def ctx_for(body: dict[str, Any], protocol: str, enabled: bool = True, path_model: str | None = None,
            **rewrite: Any) -> RequestContext:
    ctx = RequestContext(request_id="gw-test", adapter=get_adapter(protocol), headers={}, query={}, body=body,
                         path_model=path_model)
    ctx.tenant = "acme"
    ctx.policy = TenantPolicy(tenant="acme", api_keys=["sha256:" + "0" * 64],
                              prompt_rewrite=PromptRewritePolicy(enabled=enabled, **rewrite))
    adapt(ctx, ProviderTable(SETTINGS))
    return ctx


@pytest.mark.parametrize(("make", "protocol", "path_model"), [
    (chat, "openai_chat", None), (anthropic, "anthropic_messages", None), (gemini, "gemini", "gemini-2.5-flash"),
])
async def test_rewrites_only_the_upstream_body(make: Any, protocol: str, path_model: str | None) -> None:
    body = make(0, 3)
    snapshot = copy.deepcopy(body)
    ctx = ctx_for(body, protocol, path_model=path_model)
    assert await RewriteStage().before(ctx) is None
    assert ctx.body == snapshot, "the client's body (the response caches' key) is never changed"
    assert ctx.upstream_body != snapshot
    rec = ctx.record["rewrite"]
    assert rec["moved"] and all(set(m) == {"where", "kind", "chars"} for m in rec["moved"])
    assert ctx.record["prefix_hash"] == rec["prefix_hash"]
    assert ctx.record["prompt_template_id"] == "prefix:" + rec["prefix_hash"][:16]
    assert ctx.rewrite.context_index is not None


async def test_policy_off_leaves_everything() -> None:
    ctx = ctx_for(chat(0), "openai_chat", enabled=False)
    before = ctx.upstream_body
    await RewriteStage().before(ctx)
    assert ctx.upstream_body is before and "rewrite" not in ctx.record


async def test_deepseek_gets_a_user_context_turn_openai_a_system_one() -> None:
    ds = ctx_for({**chat(0), "model": "deepseek-chat"}, "openai_chat")
    oa = ctx_for(chat(0), "openai_chat")
    for ctx in (ds, oa):
        await RewriteStage().before(ctx)
    lay_ds, lay_oa = ds.rewrite, oa.rewrite
    assert ds.provider == "deepseek" and ds.upstream_body["messages"][lay_ds.context_index]["role"] == "user"
    assert oa.upstream_body["messages"][lay_oa.context_index]["role"] == "system"


async def test_tenant_patterns_and_template_header() -> None:
    body = chat(0)
    body["messages"][0]["content"] += " Ticket TCK-4411 is open."
    ctx = ctx_for(body, "openai_chat", volatile_patterns=[r"TCK-\d+"])
    ctx.template_id = "support-bot"
    await RewriteStage().before(ctx)
    assert "TCK-4411" not in ctx.upstream_body["messages"][0]["content"]
    assert any(m["kind"] == "tenant_pattern" for m in ctx.record["rewrite"]["moved"])
    assert "prompt_template_id" not in ctx.record  # the client's template id wins


async def test_already_marked_bodies_are_left_alone() -> None:
    body = chat(0)
    body["messages"][0]["content"] += " see [[gw:1]]"
    ctx = ctx_for(body, "openai_chat")
    before = ctx.upstream_body
    await RewriteStage().before(ctx)
    assert ctx.upstream_body is before and ctx.record["rewrite"]["skipped"]
