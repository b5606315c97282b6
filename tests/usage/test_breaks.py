"""Prefix breaks in the usage data: the record's `prefix` field, the aggregates by cause and template,
the what-if savings, `GET /admin/usage/breaks`'s data, the report's table; template identity of hits
and the per-model rows of untemplated requests."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

import pytest
from usage_helpers import CHAT_USAGE, finished

from gateway.accounting.pricing import PriceBook
from gateway.config import Settings
from gateway.policy.models import TenantPolicy
from gateway.stores import KVStore, open_store
from gateway.usage.breaks import breaks_report, what_if
from gateway.usage.keys import increments, template_label, template_name, untemplated
from gateway.usage.record import RecordBuilder
from gateway.usage.recorder import UsageRecorder
from gateway.usage.report import render, report_data


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[KVStore]:
    if request.param == "memory":
        kv = open_store(Settings())
    else:
        kv = open_store(Settings(redis_url=request.getfixturevalue("redis_server").url, store_timeout=2.0))
    try:
        yield kv
    finally:
        await kv.close()


def brk(cause: str, tokens: int, usd: float, **extra: object) -> dict[str, object]:
    return {"previous_request_id": "gw-prev", "common_tokens": 100,
            "break": {"part": "system", "cause": cause, "message_index": None, "tokens_lost": tokens,
                      "cost_lost_usd": usd, **extra}}


def test_the_record_carries_prefix_and_the_aggregates_count_it(book: PriceBook) -> None:
    ctx = finished(usage=CHAT_USAGE, template=("faq", "1"), record={"prefix": brk("volatile_value", 4000, 0.01)})
    rec, _ = RecordBuilder(book).build(ctx)
    assert rec.prefix is not None and rec.prefix["break"]["cause"] == "volatile_value"
    assert "prefix" not in rec.details
    inc = increments(rec)
    assert (inc["brk_volatile_value"], inc["brk_volatile_value_tokens"], inc["brk_volatile_value_usd"]) == (
        1, 4000, 0.01)
    reordered = increments(RecordBuilder(book).build(finished(
        usage=CHAT_USAGE, record={"prefix": brk("tools_changed", 300, 0.002, reordered=True)}))[0])
    assert reordered["brk_tools_changed"] == reordered["brk_reordered"] == 1
    assert not any(k.startswith("brk_") for k in increments(RecordBuilder(book).build(finished(
        usage=CHAT_USAGE, record={"prefix": {"previous_request_id": None, "common_tokens": 0, "break": None}}))[0]))


def test_what_if() -> None:
    agg = {"brk_volatile_value_usd": 0.3, "brk_reordered_usd": 0.1, "brk_model_changed_usd": 0.2,
           "brk_tools_changed_usd": 0.15}
    assert what_if(agg) == pytest.approx({"rewrite": 0.4, "sort_tools": 0.1, "pin_model": 0.2,
                                          "move_volatile_field": 0.3})


async def test_breaks_by_cause_and_template_and_the_report(book: PriceBook, store: KVStore,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    b = RecordBuilder(book)
    recorder = UsageRecorder(store)
    for i, (template, prefix) in enumerate([
        (("faq", "1"), brk("volatile_value", 4000, 0.010)), (("faq", "1"), brk("volatile_value", 4000, 0.010)),
        (("faq", "1"), brk("model_changed", 5000, 0.012)), (("chat", "2"), brk("history_edited", 900, 0.002)),
        (("chat", "2"), brk("tools_changed", 3000, 0.007, reordered=True)), (("chat", "2"), None),
    ]):
        ctx = finished(tenant=tenant, usage=CHAT_USAGE, template=template, request_id=f"gw-{i}",
                       created_at=time.time(), record={"prefix": prefix} if prefix else None)
        recorder.add(b.build(ctx)[0])
    assert await recorder.flush()
    data = await breaks_report(store, tenant, "7d")
    t = data["tenants"][0]
    assert t["breaks"] == 5 and t["by_cause"]["volatile_value"] == {"breaks": 2, "tokens_lost": 8000,
                                                                     "cost_lost_usd": pytest.approx(0.02)}
    rows = {r["template"]: r for r in t["templates"]}
    assert set(rows) == {"faq@1", "chat@2"}
    assert rows["faq@1"]["what_if_saved_usd"]["rewrite"] == pytest.approx(0.02)
    assert rows["faq@1"]["what_if_saved_usd"]["pin_model"] == pytest.approx(0.012)
    assert rows["chat@2"]["what_if_saved_usd"]["sort_tools"] == pytest.approx(0.007)
    assert rows["faq@1"]["cost_lost_usd"] > rows["chat@2"]["cost_lost_usd"]  # the costliest first
    render(await report_data(store, tenant, "7d", book))
    out = capsys.readouterr().out
    assert "Prefix breaks per template" in out and "volatile_value 2" in out and "faq@1" in out


def test_untemplated_rows_are_per_provider_and_model(book: PriceBook) -> None:
    b = RecordBuilder(book)
    a = b.build(finished(usage=CHAT_USAGE))[0]
    c = b.build(finished(provider="deepseek", model="deepseek-chat", usage=CHAT_USAGE))[0]
    assert template_name(a) == "-:openai/gpt-4o" and template_name(c) == "-:deepseek/deepseek-chat"
    assert untemplated(template_name(a)) and template_label(template_name(a)) == "(no template) openai/gpt-4o"
    assert not untemplated("faq@1") and template_label("faq@1") == "faq@1"


def test_a_hit_carries_the_template_identity_of_the_prompt_it_answered(book: PriceBook) -> None:
    """Without x-gateway-template, a miss and a response-cache hit of the same prompt (system prompt with a
    volatile timestamp, rewritten or not) land in the same `prefix:<family>` row."""
    from gateway.adapt import adapt
    from gateway.context import RequestContext
    from gateway.protocols import get_adapter
    from gateway.providers import ProviderTable
    from gateway.rewrite.stage import RewriteStage

    settings = Settings(openai_api_key="sk")
    policy = TenantPolicy.model_validate({"tenant": "acme", "api_keys": ["sha256:" + "0" * 64],
                                          "prompt_rewrite": {"enabled": True}})

    def ctx_for(stamp: str) -> RequestContext:
        body = {"model": "gpt-4o", "messages": [{"role": "system", "content": f"Now: {stamp}. Rules " * 30},
                                                {"role": "user", "content": "hi"}]}
        ctx = RequestContext(request_id="gw-x", adapter=get_adapter("openai_chat"), headers={}, query={}, body=body)
        ctx.tenant, ctx.policy = "acme", policy
        adapt(ctx, ProviderTable(settings))
        return ctx

    import asyncio

    miss = ctx_for("2026-11-05T10:00:00Z")
    asyncio.run(RewriteStage().before(miss))  # the miss went through the rewrite
    from gateway.answer import Answer

    miss.answer = Answer(text="x", model="gpt-4o", provider="openai", usage_raw=CHAT_USAGE)
    miss.answered_by = "upstream"
    hit = ctx_for("2026-11-05T11:30:00Z")
    hit.answer = Answer(text="x", model="gpt-4o", provider="openai", usage_raw=CHAT_USAGE)
    hit.answered_by, hit.cache_status = "response-cache", "response-hit"
    b = RecordBuilder(book)
    r_miss, r_hit = b.build(miss)[0], b.build(hit)[0]
    assert r_miss.prompt_template_id == r_hit.prompt_template_id
    assert r_hit.prompt_template_id is not None and r_hit.prompt_template_id.startswith("prefix:")
    assert template_name(r_hit) == template_name(r_miss)
