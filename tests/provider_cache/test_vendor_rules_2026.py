"""The gateway's layers follow each verified 2026 caching rule (the emulator side of each rule is
tests/emulators/test_vendor_rules_2026.py; docs/emulators.md lists the rules with their sources)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.accounting.normalize import normalize
from gateway.accounting.pricing import PriceBook, cost_breakdown
from gateway.provider_cache import anthropic, gemini, openai, tables
from gateway.provider_cache.stats import PrefixStats
from gateway.provider_cache.tokens import TokenCounter
from gateway_dev.emulators import EmulatorSet
from gateway_dev.emulators import models as emulator_models
from gateway_dev.localrun import LocalGateway

from .live import post, records_of, start

pytestmark = pytest.mark.timeout(180)
NEW = PrefixStats()
TEXT = " ".join(f"Clause {i}: a returned item needs its receipt and its original box." for i in range(400))


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    c = TokenCounter()
    assert c.load()
    return c


def words(n_tokens: int) -> str:
    return " ".join(f"w{i % 97}" for i in range(n_tokens // 2))


# ---- one source for the per-model minimums, and the emulators' copy agrees ------------------------


def test_the_minimum_tables_agree_with_the_emulators_copy() -> None:
    assert tables.ANTHROPIC_MIN == emulator_models.ANTHROPIC_MIN_CACHEABLE
    assert tables.GEMINI_MIN == emulator_models.GEMINI_MIN_CACHE
    assert tables.DEFAULT_MIN["anthropic"] == emulator_models.ANTHROPIC_DEFAULT_MIN
    assert tables.DEFAULT_MIN["gemini"] == emulator_models.GEMINI_DEFAULT_MIN
    models = [*emulator_models.OPENAI_MODELS, "gpt-5.1-codex-max", "gpt-5.7", "gpt-4.1-2025-04-14", "gpt-6"]
    for model in models:
        assert tables.openai_retentions(model) == emulator_models.openai_retentions(model), model
        assert tables.gpt_breakpoints(model) == emulator_models.openai_breakpoint_regime(model), model
    for model in [*emulator_models.ANTHROPIC_MODELS, "claude-opus-5-5", "claude-fable-5-1", "claude-3-haiku"]:
        assert tables.min_tokens("anthropic", model) == emulator_models.anthropic_min_cacheable(model), model
    for model in [*emulator_models.GEMINI_MODELS, "gemini-3.8-flash", "gemini-4-argon"]:
        assert tables.min_tokens("gemini", model) == emulator_models.gemini_min_cache(model), model
        assert tables.gemini_implicit(model) == emulator_models.gemini_implicit_caching(model), model


# ---- OpenAI --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "policy", "sent"), [
    ("gpt-5.5", "in_memory", None), ("gpt-5.5", "24h", "24h"), ("gpt-4.1", "in_memory", "in_memory"),
    ("gpt-4.1", "24h", "24h"), ("gpt-4o", "24h", None), ("gpt-5.6", "in_memory", None)])
def test_retention_is_sent_only_where_the_model_accepts_it(model: str, policy: str, sent: str | None) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    out, rec = openai.set_key_and_retention(body, model, "acme", "p", "s", NEW, "auto", policy)
    assert out.get("prompt_cache_retention") == sent and rec["retention"] == sent


def test_gpt_5_6_writes_are_normalized_and_billed() -> None:
    usage = {"prompt_tokens": 5000, "completion_tokens": 10, "total_tokens": 5010,
             "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 3000}}
    u = normalize("openai_chat", usage)
    assert (u.input_tokens, u.cached_input_tokens, u.cache_creation_input_tokens) == (5000, 1000, 3000)
    book = PriceBook()
    p = book.lookup("openai", "gpt-5.6")
    assert p.write_rate == pytest.approx(1.25 * p.input)
    cost = cost_breakdown(u, p)
    expected = 1000 * p.input + 1000 * p.read_rate + 3000 * 1.25 * p.input + 10 * p.output
    assert cost.cost_usd == pytest.approx(expected) and cost.write_premium_usd == pytest.approx(3000 * 0.25 * p.input)
    # a newer family the cost map does not price for writes: still 1.25× the input price
    unknown = PriceBook(cost_map={"gpt-5.7": {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}})
    assert unknown.lookup("openai", "gpt-5.7").write_rate == pytest.approx(2.5e-6)
    assert unknown.lookup("openai", "gpt-5.5").write_rate == 0.0  # not priced at all
    old = PriceBook(cost_map={"gpt-4.1": {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}})
    assert old.lookup("openai", "gpt-4.1").write_rate == pytest.approx(2e-6)  # writes free before 5.6


def _marked(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if isinstance(m["content"], list)
               for p in m["content"] if "prompt_cache_breakpoint" in p)


def test_gpt_5_6_breakpoint_budget_counts_the_clients(counter: TokenCounter) -> None:
    prices = tables.fallback_prices("openai", "gpt-5.6")
    bp = {"mode": "explicit"}
    client = [{"role": "system", "content": [{"type": "text", "text": TEXT, "prompt_cache_breakpoint": bp}]}]
    client += [{"role": "user", "content": [{"type": "text", "text": f"q{i} " + words(400),
                                             "prompt_cache_breakpoint": bp}]} for i in range(2)]
    body = {"model": "gpt-5.6", "messages": [*client, {"role": "assistant", "content": "a"},
                                             {"role": "user", "content": "final"}]}
    out, rec = openai.place_breakpoints(body, "openai_chat", "gpt-5.6", 4, prices, NEW, NEW, counter)
    assert rec is not None and _marked(out) == 3 and rec["markers"] == []  # implicit mode: 3 slots, all the client's
    explicit = {**body, "prompt_cache_options": {"mode": "explicit"}}
    out, rec = openai.place_breakpoints(explicit, "openai_chat", "gpt-5.6", 4, prices, NEW, NEW, counter)
    assert rec is not None and _marked(out) == 4  # explicit mode: one slot left for the gateway
    # a family whose writes are never read: explicit mode without breakpoints, unless the client chose
    quiet, rec2 = openai.stop_writing({"model": "gpt-5.6", "messages": [{"role": "user", "content": "x"}]})
    assert quiet["prompt_cache_options"] == {"mode": "explicit"} and rec2["decision"] == "skip_unread"
    assert openai.stop_writing(body)[0] is body


# ---- Anthropic -----------------------------------------------------------------------------------


def _anthropic(model: str, system: Any, **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": 50, "system": system,
            "messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                         {"role": "user", "content": "q2"}], **extra}


def _count(body: dict[str, Any]) -> int:
    import orjson

    raw = orjson.dumps({k: v for k, v in body.items() if k != "cache_control"}).decode()
    return raw.count('"cache_control"') + (1 if body.get("cache_control") else 0)


def test_the_automatic_top_level_marker_counts_in_the_breakpoint_budget(counter: TokenCounter) -> None:
    prices = tables.fallback_prices("anthropic", "claude-sonnet-4-5")
    eph = {"type": "ephemeral"}
    system = [{"type": "text", "text": TEXT[:3000], "cache_control": eph},
              {"type": "text", "text": TEXT[3000:9000], "cache_control": eph},
              {"type": "text", "text": TEXT[9000:], "cache_control": eph}]
    body = _anthropic("claude-sonnet-4-5", system, cache_control=eph)
    out, plan = anthropic.place(body, 2, 1024, "auto", prices, NEW, NEW, counter)
    assert plan.client_markers == 4 and _count(out) == 4 and plan.decision == "skip_slots"
    one = _anthropic("claude-sonnet-4-5", TEXT, cache_control=eph)
    out, plan = anthropic.place(one, 2, 1024, "auto", prices, NEW, NEW, counter)
    assert plan.client_markers == 1 and 1 < _count(out) <= 4


@pytest.mark.parametrize(("model", "tokens", "marked"), [
    ("claude-opus-5", 700, True), ("claude-sonnet-4-5", 700, False), ("claude-haiku-4-5", 3000, False),
    ("claude-haiku-4-5", 4500, True), ("claude-opus-4-7", 1500, False)])
def test_no_marker_under_the_models_minimum(counter: TokenCounter, model: str, tokens: int, marked: bool) -> None:
    prices = tables.fallback_prices("anthropic", model)
    _, plan = anthropic.place(_anthropic(model, words(tokens)), 2, tables.min_tokens("anthropic", model), "auto",
                              prices, NEW, NEW, counter)
    assert bool(plan.markers) is marked, plan.as_record()


def test_longer_ttls_are_placed_before_shorter_ones(counter: TokenCounter, emu: EmulatorSet) -> None:
    import httpx2

    prices = tables.fallback_prices("anthropic", "claude-sonnet-4-5")
    system = [{"type": "text", "text": TEXT, "cache_control": {"type": "ephemeral"}}]  # the client's 5m
    tools = [{"name": "lookup", "description": words(1200), "input_schema": {"type": "object"}}]
    busy = PrefixStats(count=20, interval_s=600.0)  # back every 10 minutes: a 1h write pays
    out, plan = anthropic.place(_anthropic("claude-sonnet-4-5", system, tools=tools), 2, 1024, "1h", prices,
                                busy, busy, counter)
    at = {m["at"]: m["ttl"] for m in plan.markers}
    assert at.get("tools") == "1h"  # before the client's 5m marker: allowed
    assert "turn" not in at  # after it, a 1h marker would be refused: the layer leaves it out
    r = httpx2.post(f"{emu.anthropic_base_url}/v1/messages", json=out,
                    headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
    assert r.status_code == 200, r.text


def test_a_bridge_marker_keeps_the_previous_write_within_the_lookback(counter: TokenCounter) -> None:
    prices = tables.fallback_prices("anthropic", "claude-sonnet-4-5")
    start = [{"role": "user", "content": [{"type": "text", "text": TEXT}]}, {"role": "assistant", "content": "a0"}]
    notes = [{"type": "text", "text": f"note {i}"} for i in range(24)]
    grown = [*start, {"role": "user", "content": notes}, {"role": "assistant", "content": "a1"},
             {"role": "user", "content": "q2"}]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": grown}
    seen = PrefixStats(count=1, marker=1)  # the previous request's turn marker was on block 1 (a0)
    _, plan = anthropic.place(body, 4, 1024, "5m", prices, NEW, seen, counter)
    assert [m["at"] for m in plan.markers][:2] == ["bridge", "turn"] or {"bridge", "turn"} <= {
        m["at"] for m in plan.markers}
    near = {"model": "claude-sonnet-4-5", "max_tokens": 10,
            "messages": [*start, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                         {"role": "user", "content": "q2"}]}
    _, plan = anthropic.place(near, 4, 1024, "5m", prices, NEW, seen, counter)
    assert "bridge" not in {m["at"] for m in plan.markers}  # within 20 positions: no bridge needed


# ---- Gemini --------------------------------------------------------------------------------------


def test_gemini_caches_only_above_each_models_minimum(counter: TokenCounter) -> None:
    body = {"systemInstruction": {"parts": [{"text": words(3000)}]},
            "contents": [{"role": "user", "parts": [{"text": "q"}]}]}
    for model, cached in (("gemini-2.5-flash", True), ("gemini-3-flash-preview", False),
                          ("gemini-3.1-pro-preview", False)):
        prefix, _ = gemini.choose_prefix(body, model, "fp", 0, tables.min_tokens("gemini", model), counter)
        assert (prefix is not None) is cached, model


# ---- through the live gateway ----------------------------------------------------------------------

KEY = "sk-rules-live"
TENANTS = {"rules": {"key": KEY, "response_cache": {"enabled": False},
                     "provider_cache": {"anthropic": {"enabled": True}, "vendor_diagnostics": True,
                                        "gemini": {"enabled": True, "ttl": "10m", "min_expected_reuses": 10}}}}


@pytest.fixture(scope="module")
def gw(emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalGateway]:
    g = start(emu, tmp_path_factory.mktemp("rules"), TENANTS)
    try:
        yield g
    finally:
        g.stop()


def test_vendor_diagnostics_are_recorded_beside_the_gateways_verdict(gw: LocalGateway, emu: EmulatorSet) -> None:
    ant = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "x-gateway-session": uuid.uuid4().hex}
    msgs = [{"role": "user", "content": "Can I return a lamp?"}]
    a = post(gw, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 20, "system": TEXT, "messages": msgs},
             ant)
    assert emu.requests("anthropic.messages")[-1].body["diagnostics"] == {"previous_message_id": None}
    gw.wait_idle()
    b = post(gw, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 20, "system": TEXT + " Be brief.",
                                  "messages": msgs}, ant)
    assert emu.requests("anthropic.messages")[-1].body["diagnostics"] == {"previous_message_id": a.json()["id"]}
    oai = {"authorization": f"Bearer {KEY}", "x-gateway-session": uuid.uuid4().hex}
    tools = [{"type": "function", "name": "get_time", "parameters": {"type": "object"}}]
    c = post(gw, "/v1/responses", {"model": "gpt-5.6", "instructions": TEXT, "input": "Time?", "tools": tools}, oai)
    gw.wait_idle()
    d = post(gw, "/v1/responses", {"model": "gpt-5.6", "instructions": TEXT, "input": "Time?",
                                   "tools": [{**tools[0], "name": "get_date"}]}, oai)
    sent = emu.requests("openai.responses")[-1].body
    assert sent["prompt_cache_options"]["comparison_response_id"] == c.json()["id"]
    rec_b, rec_d = records_of(gw, "rules", [b.headers["x-gateway-request-id"], d.headers["x-gateway-request-id"]])
    assert rec_b["prefix"]["break"]["cause"] == "system_changed"
    assert rec_b["prefix"]["vendor"]["cache_miss_reason"]["type"] == "system_changed"
    assert rec_d["prefix"]["break"]["cause"] == "tools_changed"
    # the gateway's prompt_cache_key follows the stable prefix, tools included: the vendor names it first
    assert (rec_d["prefix"]["vendor"]["type"], rec_d["prefix"]["vendor"]["reason"]) == ("cache_miss",
                                                                                        "prompt_cache_key_changed")
    assert rec_d["prefix"]["vendor"]["source"] == "openai"


def test_the_lookback_bridge_through_the_vendor(gw: LocalGateway, emu: EmulatorSet) -> None:
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "x-gateway-session": uuid.uuid4().hex}
    start_turns = [{"role": "user", "content": TEXT}, {"role": "assistant", "content": "a0"},
                   {"role": "user", "content": "q1"}]
    post(gw, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 20, "messages": start_turns}, headers)
    gw.wait_idle()
    time.sleep(0.3)  # the conversation's statistics are written in the background
    notes = [{"type": "text", "text": f"note {i}"} for i in range(24)]
    grown = [*start_turns[:2], {"role": "user", "content": notes}, {"role": "assistant", "content": "a1"},
             {"role": "user", "content": "q2"}]
    r = post(gw, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 20, "messages": grown}, headers)
    sent = emu.requests("anthropic.messages")[-1].body
    assert "cache_control" in sent["messages"][1]["content"][0]  # the bridge, where the last write was
    assert r.json()["usage"]["cache_read_input_tokens"] > 2000


def test_gemini_storage_is_priced_per_token_hour(gw: LocalGateway, emu: EmulatorSet) -> None:
    body = {"systemInstruction": {"parts": [{"text": "Storage test. " + words(3000)}]},
            "contents": [{"role": "user", "parts": [{"text": "q"}]}]}
    r = post(gw, "/v1beta/models/gemini-2.5-flash:generateContent", body, {"x-goog-api-key": KEY})
    rec = records_of(gw, "rules", [r.headers["x-gateway-request-id"]])[0]
    assert rec["details"]["provider_cache"]["decision"] == "create"
    cache = emu.vendors.gemini.caches.list("gateway-gemini-key")[-1]
    tokens = len(cache.tokens)
    p = gw.components.pipeline.stage("usage").prices.lookup("gemini", "gemini-2.5-flash")  # type: ignore[union-attr]
    hours = (cache.expire_time - cache.create_time) / 3600.0
    assert hours == pytest.approx(10 / 60, abs=1e-3)
    assert rec["storage_cost_usd"] == pytest.approx(tokens * (p.storage_per_token_hour * hours + p.input), rel=1e-3)
