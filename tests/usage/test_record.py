"""Usage records of finished requests: misses, gateway hits, errors, storage charges."""

from __future__ import annotations

import orjson
import pytest
from usage_helpers import ANTHROPIC_USAGE, CHAT_USAGE, finished

from gateway.accounting.pricing import PriceBook
from gateway.usage.record import RecordBuilder, storage_record
from gateway.usage.recorder import serialize

CONTRACT_FIELDS = (
    "request_id", "tenant", "provider", "model", "upstream", "gateway_cache", "prompt_template_id",
    "prompt_template_version", "input_tokens", "cached_input_tokens", "cache_creation_input_tokens",
    "cache_read_input_tokens", "output_tokens", "total_tokens", "time_to_first_token_s", "latency_s",
    "prompt_cache_key", "cache_retention", "cost_usd", "cost_without_cache_usd", "created_at", "usage_raw",
)


@pytest.fixture
def builder(book: PriceBook) -> RecordBuilder:
    return RecordBuilder(book)


def test_miss_record_has_every_contract_field(builder: RecordBuilder) -> None:
    ctx = finished(usage=CHAT_USAGE, template=("faq", "3"), record={"prompt_cache_key": "k1", "decision": "x"})
    rec, _ = builder.build(ctx)
    data = orjson.loads(serialize(rec))
    assert set(CONTRACT_FIELDS) <= set(data)
    assert data["usage_raw"] == CHAT_USAGE  # the vendor's object, untouched
    assert (data["input_tokens"], data["cached_input_tokens"], data["cache_read_input_tokens"]) == (2006, 1920, 1920)
    assert data["cost_usd"] == pytest.approx(0.005615)
    assert data["cost_without_cache_usd"] == pytest.approx(0.008015)
    assert data["saved_usd"] == pytest.approx(0.008015 - 0.005615) and data["saved_layer"] == "provider"
    assert (data["prompt_template_id"], data["prompt_template_version"]) == ("faq", "3")
    assert data["prompt_cache_key"] == "k1" and data["details"] == {"decision": "x"}
    assert data["request_id"] == "gw-test" and data["created_at"].endswith("Z")
    assert data["usage_dialect"] == "openai_chat" and data["price_source"] == "litellm:gpt-4o"


def test_anthropic_answer_through_the_openai_protocol(builder: RecordBuilder) -> None:
    # An OpenAI client asking for Claude: the raw usage is Anthropic's, read as Anthropic's.
    ctx = finished(protocol="openai_chat", upstream_protocol="anthropic_messages", provider="anthropic",
                   model="claude-sonnet-4-5", usage=ANTHROPIC_USAGE)
    rec, _ = builder.build(ctx)
    assert rec.input_tokens == 2098 and rec.cached_input_tokens == 1800 and rec.cache_creation_input_tokens == 248
    assert rec.cost_usd == pytest.approx(0.00939)
    assert rec.protocol == "openai_chat" and rec.usage_dialect == "anthropic"


@pytest.mark.parametrize(("answered_by", "status", "layer"), [
    ("response-cache", "response-hit", "response"),
    ("semantic-cache", "semantic-hit", "semantic"),
    ("single-flight", "miss", "single-flight"),
])
def test_hit_record_costs_nothing_and_saves_the_original_cost(builder: RecordBuilder, answered_by: str,
                                                               status: str, layer: str) -> None:
    ctx = finished(usage=CHAT_USAGE, answered_by=answered_by, cache_status=status)
    rec, money = builder.build(ctx)
    assert (rec.input_tokens, rec.cached_input_tokens, rec.output_tokens) == (2006, 1920, 300)  # the original's
    assert rec.cost_usd == 0
    assert rec.saved_usd == pytest.approx(0.005615)  # what the original answer cost
    assert rec.cost_without_cache_usd == pytest.approx(0.008015)
    assert rec.saved_layer == layer and rec.is_hit and rec.gateway_cache == status
    assert money.read_saving_usd == 0  # the provider layer saved nothing on this request


def test_a_replayed_usage_object_is_read_and_priced_as_each_request_says(book: PriceBook) -> None:
    # One usage dict object replayed by many hits (the response cache's decoded-entry memo): the
    # builder remembers its counts and prices, and every record equals one a fresh builder makes,
    # also when the same object comes as another provider's or model's answer.
    usage = dict(CHAT_USAGE)
    shared = RecordBuilder(book)
    variants = [{}, {"model": "gpt-4o-mini"}, {"provider": "deepseek", "model": "deepseek-chat"}, {}]
    for extra in variants:
        def ctx(extra=extra):  # type: ignore[no-untyped-def]
            return finished(usage=usage, answered_by="response-cache", cache_status="response-hit", **extra)
        for _ in range(2):
            got, got_money = shared.build(ctx())
            want, want_money = RecordBuilder(book).build(ctx())
            got.created_at, got.ts, got.latency_s = want.created_at, want.ts, want.latency_s
            assert (got, got_money) == (want, want_money)
    assert len(shared._known) == 3  # one entry per provider and model, none per hit


def test_saved_from_overrides_the_original(builder: RecordBuilder) -> None:
    ctx = finished(usage={}, answered_by="semantic-cache", cache_status="semantic-hit", model="gpt-4o",
                   record={"saved_from": {"layer": "semantic", "usage_raw": ANTHROPIC_USAGE,
                                          "provider": "anthropic", "model": "claude-sonnet-4-5"}})
    rec, _ = builder.build(ctx)
    assert rec.provider == "anthropic" and rec.input_tokens == 2098
    assert rec.saved_usd == pytest.approx(0.00939) and rec.cost_usd == 0
    assert "saved_from" not in rec.details


def test_error_record(builder: RecordBuilder) -> None:
    rec, _ = builder.build(finished(status=502))
    assert rec.status == 502 and rec.error and rec.total_tokens == 0 and rec.cost_usd == 0
    assert rec.saved_layer is None and rec.usage_raw == {}


def test_deepseek_record(builder: RecordBuilder) -> None:
    usage = {"prompt_tokens": 1500, "completion_tokens": 900, "total_tokens": 2400,
             "prompt_cache_hit_tokens": 1280, "prompt_cache_miss_tokens": 220}
    rec, _ = builder.build(finished(provider="deepseek", model="deepseek-chat", usage=usage))
    assert rec.usage_dialect == "deepseek" and rec.cached_input_tokens == 1280 and rec.input_tokens == 1500
    assert rec.cost_usd == pytest.approx(0.00047544)


def test_storage_cost_in_a_request_lowers_the_saving(builder: RecordBuilder) -> None:
    usage = {"promptTokenCount": 5210, "cachedContentTokenCount": 5000, "candidatesTokenCount": 160,
             "totalTokenCount": 5370}
    ctx = finished(protocol="gemini", provider="gemini", model="gemini-2.5-flash", usage=usage,
                   record={"storage_cost_usd": 0.01})
    rec, _ = builder.build(ctx)
    assert rec.cost_usd == pytest.approx(0.000613 + 0.01)
    assert rec.saved_usd == pytest.approx(0.001963 - 0.010613)
    assert rec.storage_cost_usd == 0.01


def test_storage_record() -> None:
    rec = storage_record("acme", "gemini", "gemini-2.5-flash", 0.02, tokens=10_000, hours=2, cache_name="c/1")
    assert rec.kind == "storage" and rec.cost_usd == 0.02 and rec.saved_usd == -0.02
    assert orjson.loads(serialize(rec))["details"] == {"cache_name": "c/1", "tokens": 10_000, "hours": 2}
