"""Anthropic breakpoint placement: at most 4 with the client's, client markers kept, none under the
minimum, TTL by break-even or by policy, longer TTLs first."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from gateway.provider_cache.anthropic import place
from gateway.provider_cache.stats import PrefixStats
from gateway.provider_cache.tables import fallback_prices, min_tokens
from gateway.provider_cache.tokens import TokenCounter

PRICES = fallback_prices("anthropic", "claude-sonnet-4-5")
NEW = PrefixStats()


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    c = TokenCounter()
    assert c.load()
    return c


def body(system_words: int = 1500, turns: int = 3, tool_words: int = 1) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for t in range(turns - 1):
        messages += [{"role": "user", "content": f"question {t}"}, {"role": "assistant", "content": f"answer {t}"}]
    messages.append({"role": "user", "content": "final question"})
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "policy " * system_words,
            "tools": [{"name": "a", "description": "lookup " * tool_words, "input_schema": {"type": "object"}},
                      {"name": "b", "description": "d", "input_schema": {"type": "object"}}],
            "messages": messages}


def markers(b: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    if b.get("cache_control"):
        out.append(("top", b["cache_control"]))
    for i, t in enumerate(b.get("tools") or []):
        if "cache_control" in t:
            out.append((f"tools.{i}", t["cache_control"]))
    if isinstance(b.get("system"), list):
        out += [(f"system.{j}", s["cache_control"]) for j, s in enumerate(b["system"]) if "cache_control" in s]
    for i, m in enumerate(b["messages"]):
        if isinstance(m["content"], list):
            out += [(f"messages.{i}.{j}", p["cache_control"]) for j, p in enumerate(m["content"])
                    if "cache_control" in p]
    return out


def run(b: dict[str, Any], counter: TokenCounter, ttl: str = "auto", template: PrefixStats = NEW,
        conversation: PrefixStats = NEW, stable_end: int | None = None) -> tuple[dict[str, Any], Any]:
    end = len(b["messages"]) - 1 if stable_end is None else stable_end
    return place(b, end, min_tokens("anthropic", b["model"]), ttl, PRICES, template, conversation, counter)


def test_tools_system_and_newest_turn(counter: TokenCounter) -> None:
    b = body(tool_words=1200)
    original = copy.deepcopy(b)
    out, plan = run(b, counter)
    assert b == original, "the input body is not mutated"
    assert [m for m, _ in markers(out)] == ["tools.1", "system.0", "messages.3.0"]
    assert plan.decision == "cache_5m" and len(plan.markers) == 3
    # content is unchanged apart from the markers
    assert out["system"][0]["text"] == b["system"]
    assert out["messages"][3]["content"][0]["text"] == "answer 1"
    assert out["messages"][-1] == b["messages"][-1]


def test_never_more_than_four_and_client_markers_kept(counter: TokenCounter) -> None:
    b = body()
    b["system"] = [{"type": "text", "text": "policy " * 1500, "cache_control": {"type": "ephemeral"}}]
    b["messages"][0]["content"] = [{"type": "text", "text": "question 0", "cache_control": {"type": "ephemeral"}}]
    b["cache_control"] = {"type": "ephemeral"}  # automatic caching uses a slot too
    out, plan = run(b, counter)
    found = markers(out)
    assert len(found) == 4
    assert ("system.0", {"type": "ephemeral"}) in found and ("messages.0.0", {"type": "ephemeral"}) in found
    assert plan.client_markers == 3 and len(plan.markers) == 1
    assert plan.markers[0]["at"] == "turn"


def test_no_slot_left(counter: TokenCounter) -> None:
    b = body()
    for t in b["tools"]:
        t["cache_control"] = {"type": "ephemeral"}
    b["system"] = [{"type": "text", "text": "policy " * 1500, "cache_control": {"type": "ephemeral"}}]
    b["messages"][-1]["content"] = [{"type": "text", "text": "final", "cache_control": {"type": "ephemeral"}}]
    out, plan = run(b, counter)
    assert out is b and plan.decision == "skip_slots" and len(markers(out)) == 4


def test_none_under_the_minimum(counter: TokenCounter) -> None:
    b = body(system_words=200)
    out, plan = run(b, counter)
    assert out is b and markers(out) == [] and plan.decision == "skip_min"
    assert plan.prefix_tokens < plan.min_tokens == 1024


def test_only_breakpoints_whose_prefix_reaches_the_minimum(counter: TokenCounter) -> None:
    b = body(system_words=700, turns=3)
    b["messages"][2]["content"] = "long answer " * 400
    out, plan = run(b, counter)
    assert [m for m, _ in markers(out)] == ["messages.3.0"]
    assert {s["at"] for s in plan.skipped} == {"system", "tools"}


def test_ttl_by_break_even(counter: TokenCounter) -> None:
    slow = PrefixStats(count=5, last_seen=0.0, interval_s=900.0)  # every 15 min: 5m lapses, 1h holds
    hot = PrefixStats(count=500, last_seen=0.0, interval_s=3.0)
    out, plan = run(body(), counter, template=slow, conversation=slow)
    assert {m["ttl"] for m in plan.markers} == {"1h"} and plan.decision == "cache_1h"
    assert all(cc == {"type": "ephemeral", "ttl": "1h"} for _, cc in markers(out))
    _, plan = run(body(), counter, template=hot, conversation=hot)
    assert plan.decision == "cache_5m"
    # the inputs of each decision are in the record
    be = plan.markers[0]["breakeven"]
    assert be["write_price"] == pytest.approx(PRICES.write) and be["read_price"] == pytest.approx(PRICES.read)


def test_rare_prefix_is_not_written(counter: TokenCounter) -> None:
    rare = PrefixStats(count=3, last_seen=0.0, interval_s=86400.0)
    out, plan = run(body(turns=1), counter, template=rare, stable_end=0)
    assert markers(out) == [] and plan.decision == "skip_breakeven"


def test_policy_fixes_the_ttl(counter: TokenCounter) -> None:
    hot = PrefixStats(count=500, last_seen=0.0, interval_s=3.0)
    _, plan = run(body(), counter, ttl="1h", template=hot, conversation=hot)
    assert plan.decision == "cache_1h"


def test_longer_ttl_first(counter: TokenCounter) -> None:
    b = body()
    b["messages"][-1]["content"] = [{"type": "text", "text": "final", "cache_control": {"type": "ephemeral",
                                                                                       "ttl": "1h"}}]
    out, _ = run(b, counter)
    ttls = [cc.get("ttl", "5m") for _, cc in markers(out)]
    assert ttls == ["1h", "1h", "1h"]  # system, newest turn (upgraded), the client's own


def test_thinking_blocks_are_skipped(counter: TokenCounter) -> None:
    b = body()
    b["messages"][3] = {"role": "assistant", "content": [{"type": "text", "text": "visible"},
                                                         {"type": "thinking", "thinking": "hm", "signature": "s"}]}
    out, _ = run(b, counter)
    assert "cache_control" in out["messages"][3]["content"][0]
    assert "cache_control" not in out["messages"][3]["content"][1]
    assert orjson.dumps(out["messages"][3]["content"][1]) == orjson.dumps(b["messages"][3]["content"][1])
