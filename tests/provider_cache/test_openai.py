"""OpenAI: prompt_cache_key from tenant + stable prefix (never one key for every session),
retention per policy and model, GPT-5.6+ breakpoints."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.provider_cache import openai
from gateway.provider_cache.stats import PrefixStats
from gateway.provider_cache.tables import fallback_prices
from gateway.provider_cache.tokens import TokenCounter

NEW = PrefixStats()


def chat(model: str = "gpt-4o", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "system", "content": "rules " * 1500},
                                         {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                                         {"role": "user", "content": "q2"}], **extra}


def key_of(body: dict[str, Any], tenant: str = "acme", prefix: str = "p1", affinity: str = "s1",
           stats: PrefixStats = NEW) -> tuple[dict[str, Any], dict[str, Any]]:
    return openai.set_key_and_retention(body, body["model"], tenant, prefix, affinity, stats, "auto", "unset")


def test_key_set_when_the_client_sent_none() -> None:
    out, rec = key_of(chat())
    assert out["prompt_cache_key"].startswith("gw-") and rec["key"] == "gateway"
    assert rec["prompt_cache_key"] == out["prompt_cache_key"]
    # stable for the same tenant and prefix; different per tenant and per template
    assert key_of(chat())[0]["prompt_cache_key"] == out["prompt_cache_key"]
    assert key_of(chat(), tenant="other")[0]["prompt_cache_key"] != out["prompt_cache_key"]
    assert key_of(chat(), prefix="p2")[0]["prompt_cache_key"] != out["prompt_cache_key"]


def test_client_key_is_kept() -> None:
    body = chat(prompt_cache_key="mine")
    out, rec = key_of(body)
    assert out["prompt_cache_key"] == "mine" and rec == {"key": "client", "prompt_cache_key": "mine",
                                                         "retention": None}


def test_policy_off_sends_no_key() -> None:
    out, rec = openai.set_key_and_retention(chat(), "gpt-4o", "acme", "p", "s", NEW, "off", "unset")
    assert "prompt_cache_key" not in out and rec["key"] == "off"


def test_busy_templates_shard_by_session() -> None:
    quiet = PrefixStats(count=100, last_seen=0.0, interval_s=10.0)  # 6 per minute: one key
    busy = PrefixStats(count=10_000, last_seen=0.0, interval_s=0.5)  # 120 per minute: 8 shards
    assert openai.shards_for(quiet) == 1 and openai.shards_for(busy) == 8
    quiet_keys = {key_of(chat(), affinity=f"s{i}", stats=quiet)[0]["prompt_cache_key"] for i in range(50)}
    busy_keys = {key_of(chat(), affinity=f"s{i}", stats=busy)[0]["prompt_cache_key"] for i in range(200)}
    assert len(quiet_keys) == 1 and len(busy_keys) == 8
    # a session keeps its shard
    assert key_of(chat(), affinity="s7", stats=busy)[0] == key_of(chat(), affinity="s7", stats=busy)[0]


@pytest.mark.parametrize(("model", "policy", "sent"), [
    ("gpt-4.1", "24h", "24h"), ("gpt-4o", "24h", None), ("gpt-4o", "in_memory", "in_memory"),
    ("gpt-5.5", "in_memory", None), ("gpt-5.5", "24h", "24h"),
])
def test_retention_per_policy_and_model(model: str, policy: str, sent: str | None) -> None:
    out, rec = openai.set_key_and_retention(chat(model), model, "acme", "p", "s", NEW, "auto", policy)
    assert out.get("prompt_cache_retention") == sent and rec["retention"] == sent
    client = chat(model, prompt_cache_retention="in-memory")
    assert openai.set_key_and_retention(client, model, "acme", "p", "s", NEW, "auto", policy)[0][
        "prompt_cache_retention"] == "in-memory"


def test_breakpoints_only_for_gpt_5_6_and_later() -> None:
    counter = TokenCounter()
    counter.load()
    prices = fallback_prices("openai", "gpt-5.6")
    body, rec = openai.place_breakpoints(chat(), "openai_chat", "gpt-4o", 3, prices, NEW, NEW, counter)
    assert rec is None and body["messages"][0]["content"] == "rules " * 1500
    body, rec = openai.place_breakpoints(chat("gpt-5.6"), "openai_chat", "gpt-5.6", 3, prices, NEW, NEW, counter)
    assert rec is not None and rec["decision"] == "breakpoints"
    assert body["messages"][0]["content"] == [{"type": "text", "text": "rules " * 1500,
                                               "prompt_cache_breakpoint": {"mode": "explicit"}}]
    assert body["messages"][2]["content"][0]["prompt_cache_breakpoint"] == {"mode": "explicit"}
    assert body["messages"][3] == {"role": "user", "content": "q2"}
    # the client's own markers count against the slots
    marked = chat("gpt-5.6")
    mark = {"mode": "explicit"}
    marked["messages"][1]["content"] = [{"type": "text", "text": f"q{i}", "prompt_cache_breakpoint": mark}
                                        for i in range(3)]
    body, rec = openai.place_breakpoints(marked, "openai_chat", "gpt-5.6", 3, prices, NEW, NEW, counter)
    assert rec is not None and rec["markers"] == [] and rec["skipped"][0]["reason"] == "no slot left"


def test_a_conversation_keeps_its_shard_while_the_template_gets_busier() -> None:
    quiet = PrefixStats(count=100, last_seen=0.0, interval_s=10.0)
    busy = PrefixStats(count=10_000, last_seen=0.0, interval_s=0.1)  # 600 per minute: 64 shards
    first, rec = openai.set_key_and_retention(chat(), "gpt-4o", "acme", "p", "s3", quiet, "auto", "unset")
    assert rec["shard"] == 0 and rec["shards"] == 1
    kept = PrefixStats(count=1, shard=rec["shard"])  # what the stage stored for the conversation
    later, rec2 = openai.set_key_and_retention(chat(), "gpt-4o", "acme", "p", "s3", busy, "auto", "unset", kept)
    assert later["prompt_cache_key"] == first["prompt_cache_key"] and rec2["shards"] == 64
    fresh, _ = openai.set_key_and_retention(chat(), "gpt-4o", "acme", "p", "s3", busy, "auto", "unset")
    new_keys = {openai.set_key_and_retention(chat(), "gpt-4o", "acme", "p", f"c{i}", busy, "auto", "unset")[0][
        "prompt_cache_key"] for i in range(100)}
    assert len(new_keys) > 30 and fresh["prompt_cache_key"] in new_keys | {fresh["prompt_cache_key"]}


def test_gpt_5_6_reads_where_the_previous_request_wrote() -> None:
    """A cached prefix matches exactly at a breakpoint: the turn where the conversation's previous
    request put its marker gets one again; the rewrite's context block is never marked as system."""
    counter = TokenCounter()
    counter.load()
    prices = fallback_prices("openai", "gpt-5.6")
    body = chat("gpt-5.6")
    body["messages"] += [{"role": "assistant", "content": "a2"}, {"role": "user", "content": "q3"}]
    seen = PrefixStats(count=3, marker=2)  # the previous request's turn marker: messages[2]
    out, rec = openai.place_breakpoints(body, "openai_chat", "gpt-5.6", 5, prices, NEW, seen, counter)
    assert rec is not None
    at = {m["at"]: m["turn"] for m in rec["markers"]}
    assert at == {"turn": 4, "previous": 2, "system": 0}
    assert out["messages"][2]["content"][0]["prompt_cache_breakpoint"] == {"mode": "explicit"}
    ctx_block = chat("gpt-5.6")
    ctx_block["messages"].insert(1, {"role": "system", "content": "<gateway-context>\n[[gw:1]] = x"})
    _, rec = openai.place_breakpoints(ctx_block, "openai_chat", "gpt-5.6", 1, prices, NEW, NEW, counter)
    assert rec is not None and all(m["turn"] == 0 for m in rec["markers"])  # stable part: the system turn only
