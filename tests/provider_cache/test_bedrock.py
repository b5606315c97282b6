"""Bedrock cachePoint placement: Anthropic's rule on the Converse body's view, cachePoints inserted after the
blocks it marks, the client's own cachePoints kept and counted (at most 4 in all), each model's minimum, Nova
without checkpoints in tools; the Bedrock emulator accepts the placed body and reads what it wrote."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import httpx2
import orjson
import pytest

from gateway.provider_cache import bedrock
from gateway.provider_cache.anthropic import place
from gateway.provider_cache.stats import PrefixStats
from gateway.provider_cache.tables import fallback_prices
from gateway.provider_cache.tokens import TokenCounter
from gateway.rewrite.anthropic import layout
from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)
CLAUDE = "anthropic.claude-sonnet-4-20250514-v1:0"
PRICES = fallback_prices("anthropic", CLAUDE)


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    c = TokenCounter()
    assert c.load()
    return c


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        yield e


def converse(system_words: int = 1500, tool_words: int = 1, turns: int = 2) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for t in range(turns - 1):
        messages += [{"role": "user", "content": [{"text": f"question {t}"}]},
                     {"role": "assistant", "content": [{"text": f"answer {t}"}]}]
    messages.append({"role": "user", "content": [{"text": "final question"}]})
    return {"system": [{"text": "policy " * system_words}],
            "toolConfig": {"tools": [{"toolSpec": {"name": "lookup", "description": "lookup " * tool_words,
                                                   "inputSchema": {"json": {"type": "object"}}}}]},
            "messages": messages}


def placed(body: dict[str, Any], counter: TokenCounter, model: str = CLAUDE) -> tuple[dict[str, Any], Any]:
    v, *where = bedrock.view(body)
    new_view, plan = place(v, layout(v).stable_end, bedrock.minimum(model), "auto", PRICES, PrefixStats(),
                           PrefixStats(), counter)
    if bedrock.base_model(model).startswith("amazon.nova-"):
        new_view = bedrock.without_tool_points(new_view, v)
    out, _ = bedrock.apply(body, v, new_view, *where)
    return out, plan


def points(body: dict[str, Any]) -> list[str]:
    out = [f"tools.{j}" for j, t in enumerate(body.get("toolConfig", {}).get("tools", [])) if "cachePoint" in t]
    out += [f"system.{j}" for j, b in enumerate(body.get("system", [])) if "cachePoint" in b]
    for i, m in enumerate(body["messages"]):
        out += [f"messages.{i}.{j}" for j, b in enumerate(m["content"]) if "cachePoint" in b]
    return out


def test_points_after_system_tools_and_the_newest_turn(counter: TokenCounter) -> None:
    body = converse(tool_words=1200)
    original = copy.deepcopy(body)
    out, plan = placed(body, counter)
    assert body == original, "the input body is not mutated"
    assert points(out) == ["tools.1", "system.1", "messages.1.1"]
    assert out["system"][1] == {"cachePoint": {"type": "default"}} and plan.decision == "cache_5m"
    assert [b for b in out["messages"][1]["content"] if "cachePoint" not in b] == body["messages"][1]["content"]
    assert out["messages"][-1] == body["messages"][-1]


def test_client_points_are_kept_and_count_toward_four(counter: TokenCounter) -> None:
    body = converse(tool_words=1200, turns=3)
    body["system"].append({"cachePoint": {"type": "default"}})
    body["messages"][0]["content"].append({"cachePoint": {"type": "default"}})
    body["messages"][2]["content"].append({"cachePoint": {"type": "default"}})
    out, plan = placed(body, counter)
    assert plan.client_markers == 3 and len(points(out)) == 4
    assert out["system"] == body["system"] and out["messages"][0] == body["messages"][0]


def test_under_the_minimum_and_models_that_do_not_cache(counter: TokenCounter) -> None:
    out, plan = placed(converse(system_words=100), counter)
    assert points(out) == [] and plan.decision == "skip_min"
    assert bedrock.minimum("us.anthropic.claude-3-5-haiku-20241022-v1:0") == 2048
    assert bedrock.minimum("anthropic.claude-3-7-sonnet-20250219-v1:0") == 1024
    assert bedrock.minimum("amazon.nova-pro-v1:0") == 1000
    assert bedrock.caches("eu.amazon.nova-lite-v1:0") and not bedrock.caches("meta.llama3-70b-instruct-v1:0")


def test_nova_gets_no_point_in_tools(counter: TokenCounter) -> None:
    out, _ = placed(converse(tool_words=1200), counter, "amazon.nova-pro-v1:0")
    assert not any(p.startswith("tools") for p in points(out)) and "system.1" in points(out)


def test_the_emulator_reads_what_the_placed_points_wrote(emu: EmulatorSet, counter: TokenCounter) -> None:
    url = emu.platform_url + "/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse"
    body, _ = placed(converse(), counter)
    usages = []
    for _ in range(2):
        r = httpx2.post(url, content=orjson.dumps(body), headers={"authorization": "Bearer ABSKdGVzdA=="})
        assert r.status_code == 200, r.text
        usages.append(r.json()["usage"])
    assert usages[0]["cacheWriteInputTokens"] >= 1024 and usages[0]["cacheReadInputTokens"] == 0
    assert usages[1]["cacheReadInputTokens"] == usages[0]["cacheWriteInputTokens"]
