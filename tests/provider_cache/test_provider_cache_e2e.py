"""Acceptance of the rewrite and provider-cache layers: official SDKs → the gateway (uvicorn, real
app, usage + rewrite + provider-cache stages) → the vendor emulators, which report what their caches
served. Tenant `on` has the layers on, tenant `off` has them off; everything else is equal.

What the emulators received is read from their request log; what their caches served, from the
usage the SDKs parsed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import orjson
import pytest
from google import genai
from google.genai import types as genai_types

from gateway.app import create_app
from gateway.assembly import Components, build_components
from gateway.config import Settings
from gateway.provider_cache.stage import ProviderCacheStage
from gateway.rewrite.move import CONTEXT_OPEN
from gateway.rewrite.stage import RewriteStage
from gateway.stores import open_store
from gateway.usage.query import records
from gateway.usage.stage import UsageStage
from gateway_dev.emulators import EmulatorSet
from gateway_dev.localrun import UvicornThread, write_policies

ADMIN = "adm-" + "y" * 20
KEYS = {"on": "sk-on-0001", "off": "sk-off-0001"}
TENANTS = {
    "on": {"key": KEYS["on"], "response_cache": {"enabled": False}, "prompt_rewrite": {"enabled": True},
           "provider_cache": {"anthropic": {"enabled": True, "ttl": "auto"}, "gemini": {"enabled": True, "ttl": "1h",
                                                                                        "min_expected_reuses": 10},
                              "openai": {"prompt_cache_key": "auto"}}},
    "off": {"key": KEYS["off"], "response_cache": {"enabled": False}, "prompt_rewrite": {"enabled": False},
            "provider_cache": {"anthropic": {"enabled": False}, "gemini": {"enabled": False},
                               "openai": {"prompt_cache_key": "off"}}},
}
HANDBOOK = " ".join(f"Rule {i}: items bought in category {i} may be returned within {i + 10} days." for i in range(230))


def system(i: int) -> str:
    return f"You are Acme's support assistant. Current time: 2026-11-05T10:{i // 60:02d}:{i % 60:02d}Z. {HANDBOOK}"


@dataclass
class Gateway:
    url: str
    server: UvicornThread
    parts: Components
    stage: ProviderCacheStage


def start_gateway(emu: EmulatorSet, folder: Path, redis_url: str | None = None) -> Gateway:
    write_policies(folder / "policies", TENANTS)
    settings = Settings(policies=folder / "policies", data_dir=folder / "data", redis_url=redis_url, admin_key=ADMIN,
                        openai_api_key="sk-up", anthropic_api_key="sk-up", gemini_api_key="up",
                        deepseek_api_key="sk-up", openai_base_url=emu.openai_base_url,
                        anthropic_base_url=emu.anthropic_base_url, gemini_base_url=emu.gemini_base_url,
                        deepseek_base_url=emu.deepseek_base_url)
    store = open_store(settings)
    # The stage reads the emulators' clock, so moving it expires handles on both sides alike.
    stage = ProviderCacheStage(settings, store, clock=emu.clock.now)
    parts = build_components(settings, store=store, stages=[UsageStage(settings, store), RewriteStage(), stage])
    parts.purgers["provider"] = stage.purge
    server = UvicornThread(create_app(settings, parts)).start()
    return Gateway(server.url, server, parts, stage)


@pytest.fixture(scope="module")
def gw(emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gateway = start_gateway(emu, tmp_path_factory.mktemp("gw"))
    try:
        yield gateway
    finally:
        gateway.server.stop()


def last_body(emu: EmulatorSet, endpoint: str) -> dict[str, Any]:
    return emu.requests(endpoint)[-1].body


def conversation(i: int, turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": system(i)}]
    for t in range(turns - 1):
        messages += [{"role": "user", "content": f"Question {t}: what does rule {t} say?"},
                     {"role": "assistant", "content": f"Rule {t} allows returns within {t + 10} days."}]
    messages.append({"role": "user", "content": f"Final question {turns}: and rule {turns + 40}?"})
    return messages


# ---- OpenAI and DeepSeek ------------------------------------------------------------------------


def chat(gw: Gateway, tenant: str, model: str, messages: list[dict[str, Any]]) -> Any:
    with openai.OpenAI(base_url=gw.url + "/v1", api_key=KEYS[tenant], max_retries=0) as client:
        return client.chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type]


def test_openai_requests_carry_a_key_and_hit_the_vendor_cache(gw: Gateway, emu: EmulatorSet) -> None:
    cached: dict[str, list[int]] = {}
    for tenant in ("off", "on"):
        emu.reset(caches=True)
        cached[tenant] = [chat(gw, tenant, "gpt-4o", conversation(i, turns=i + 1)).usage.prompt_tokens_details
                          .cached_tokens for i in range(3)]
        body = last_body(emu, "openai.chat")
        sent = body["messages"]
        assert sent[-1] == conversation(2, 3)[-1], "the final question reaches the vendor byte-identical"
        if tenant == "on":
            assert body["prompt_cache_key"].startswith("gw-")
            assert "2026-11-05T10:00:02Z" not in sent[0]["content"]
            assert CONTEXT_OPEN in sent[-2]["content"] and "2026-11-05T10:00:02Z" in sent[-2]["content"]
        else:
            assert "prompt_cache_key" not in body and sent == conversation(2, 3)
    assert cached["off"] == [0, 0, 0]
    assert cached["on"][0] == 0 and min(cached["on"][1:]) > 2500


def test_deepseek_rewrite_makes_its_disk_cache_hit(gw: Gateway, emu: EmulatorSet) -> None:
    hits: dict[str, list[int]] = {}
    for tenant in ("off", "on"):
        emu.reset(caches=True)
        hits[tenant] = [int(getattr(chat(gw, tenant, "deepseek-chat", conversation(i, turns=i + 1)).usage,
                                    "prompt_cache_hit_tokens", 0) or 0) for i in range(4)]
        body = last_body(emu, "deepseek.chat")
        assert "prompt_cache_key" not in body
        if tenant == "on":
            assert body["messages"][-2]["role"] == "user" and CONTEXT_OPEN in body["messages"][-2]["content"]
    assert sum(hits["off"]) == 0
    assert max(hits["on"][2:]) > 2500  # DeepSeek persists a shared prefix once two requests showed it


# ---- Anthropic ----------------------------------------------------------------------------------


def messages_call(gw: Gateway, tenant: str, **params: Any) -> Any:
    with anthropic.Anthropic(base_url=gw.url, api_key=KEYS[tenant], max_retries=0) as client:
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=64, **params)


def count_markers(body: dict[str, Any]) -> int:
    raw = orjson.dumps({k: v for k, v in body.items() if k != "cache_control"}).decode()
    return raw.count('"cache_control"') + (1 if body.get("cache_control") else 0)


def test_anthropic_breakpoints_bounded_client_markers_kept(gw: Gateway, emu: EmulatorSet) -> None:
    reads = []
    for i in range(3):
        msgs = conversation(i, turns=i + 1)
        usage = messages_call(gw, "on", system=msgs[0]["content"], messages=msgs[1:]).usage
        reads.append(usage.cache_read_input_tokens or 0)
        body = last_body(emu, "anthropic.messages")
        assert 1 <= count_markers(body) <= 4
        assert body["messages"][-1] == msgs[-1]
    assert reads[0] == 0 and min(reads[1:]) > 2500
    # the client's own markers survive where they were, and the total stays within 4
    msgs = conversation(5, turns=3)
    client_system = [{"type": "text", "text": msgs[0]["content"], "cache_control": {"type": "ephemeral"}}]
    first = {"role": "user", "content": [{"type": "text", "text": msgs[1]["content"],
                                          "cache_control": {"type": "ephemeral"}}]}
    messages_call(gw, "on", system=client_system, messages=[first, *msgs[2:]], cache_control={"type": "ephemeral"})
    body = last_body(emu, "anthropic.messages")
    assert count_markers(body) == 4
    assert body["cache_control"] == {"type": "ephemeral"}
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    # four client markers: nothing added, and the request still succeeds
    tools = [{"name": f"t{i}", "description": "d", "input_schema": {"type": "object"},
              "cache_control": {"type": "ephemeral"}} for i in range(2)]
    messages_call(gw, "on", system=client_system, tools=tools, messages=[first, *msgs[2:]])
    assert count_markers(last_body(emu, "anthropic.messages")) == 4
    # layer off: nothing added, nothing read
    msgs = conversation(7, turns=2)
    usage = messages_call(gw, "off", system=msgs[0]["content"], messages=msgs[1:]).usage
    assert count_markers(last_body(emu, "anthropic.messages")) == 0 and not usage.cache_read_input_tokens


# ---- Gemini -------------------------------------------------------------------------------------


def generate(gw: Gateway, tenant: str, i: int, question: str = "What does rule 7 say?",
             url: str | None = None, extra: str = "") -> Any:
    client = genai.Client(api_key=KEYS[tenant], http_options=genai_types.HttpOptions(base_url=url or gw.url))
    try:
        return client.models.generate_content(
            model="gemini-2.5-flash", contents=question,
            config=genai_types.GenerateContentConfig(system_instruction=system(i) + extra))
    finally:
        client.close()


def test_gemini_cache_created_once_referenced_recreated_purged(gw: Gateway, emu: EmulatorSet) -> None:
    first = generate(gw, "on", 0)
    assert emu.calls("gemini.cachedContents.create") == 1
    name = last_body(emu, "gemini.generateContent")["cachedContent"]
    assert "systemInstruction" not in last_body(emu, "gemini.generateContent")
    assert first.usage_metadata.cached_content_token_count > 2000
    for i in range(1, 4):
        resp = generate(gw, "on", i, question=f"And rule {i}?")
        assert last_body(emu, "gemini.generateContent")["cachedContent"] == name
        assert resp.usage_metadata.cached_content_token_count == first.usage_metadata.cached_content_token_count
    assert emu.calls("gemini.cachedContents.create") == 1 and emu.calls("gemini.cachedContents.list") == 0
    # expired (both clocks two hours on): created again, and the new one is used
    emu.clock.advance(7200)
    generate(gw, "on", 9)
    assert emu.calls("gemini.cachedContents.create") == 2
    renewed = last_body(emu, "gemini.generateContent")["cachedContent"]
    assert renewed != name
    # purged through the admin API: deleted upstream
    r = httpx2.post(gw.url + "/admin/cache/purge", json={"tenant": "on", "layer": "provider"},
                    headers={"authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 200 and r.json()["removed"]["provider"] == 1
    assert emu.calls("gemini.cachedContents.delete") == 1
    assert emu.vendors.gemini.caches.list("up") == []
    # layer off: no cache, the system instruction goes as sent
    generate(gw, "off", 10)
    body = last_body(emu, "gemini.generateContent")
    assert "cachedContent" not in body and body["systemInstruction"]["parts"][0]["text"] == system(10)


def test_usage_records_carry_the_decisions(gw: Gateway, emu: EmulatorSet) -> None:
    with openai.OpenAI(base_url=gw.url + "/v1", api_key=KEYS["on"], max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o",
                                                               messages=conversation(30, turns=2))  # type: ignore[arg-type]
    gem_resp = generate(gw, "on", 31, extra=" Records test.")  # a template of its own: no history
    ids = {raw.headers["x-gateway-request-id"]: "openai",
           gem_resp.sdk_http_response.headers["x-gateway-request-id"]: "gemini"}
    deadline = time.monotonic() + 15
    found: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline and len(found) < 2:
        time.sleep(0.2)  # the usage recorder flushes in the background
        found = {ids[r["request_id"]]: r for r in gw.server.call(records(gw.parts.store, "on", 50))
                 if r["request_id"] in ids}
    oai, gem = found["openai"], found["gemini"]
    assert oai["prompt_cache_key"].startswith("gw-")
    assert oai["prompt_template_id"].startswith("prefix:")
    assert oai["details"]["provider_cache"]["decision"] == "key"
    assert oai["details"]["rewrite"]["moved"][0]["kind"] == "datetime"
    assert gem["details"]["provider_cache"]["decision"] == "create"
    assert gem["details"]["provider_cache"]["breakeven"]["expected_reuses"] == 10  # the policy's prior
    assert gem["storage_cost_usd"] > 0 and gem["cached_input_tokens"] > 2000


# ---- two gateway processes, one Redis -----------------------------------------------------------


def test_two_gateways_sharing_redis_create_the_gemini_cache_once(emu: EmulatorSet, redis_server: Any,
                                                                  tmp_path: Path) -> None:
    a = start_gateway(emu, tmp_path / "a", redis_server.url)
    b = start_gateway(emu, tmp_path / "b", redis_server.url)
    try:
        errors: list[BaseException] = []

        def ask(url: str, i: int) -> None:
            try:
                generate(a, "on", 100 + i, question=f"Question {i}?", url=url)
            except BaseException as exc:  # collected for the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=ask, args=(g.url, i)) for i, g in enumerate([a, b] * 4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        assert emu.calls("gemini.cachedContents.create") == 1
        names = set()
        for i, g in enumerate([a, b]):
            generate(g, "on", 200 + i, url=g.url)
            names.add(last_body(emu, "gemini.generateContent")["cachedContent"])
        assert len(names) == 1 and emu.calls("gemini.cachedContents.create") == 1
        # one purge through either gateway removes it for both
        r = httpx2.post(b.url + "/admin/cache/purge", json={"tenant": "on", "layer": "provider"},
                        headers={"authorization": f"Bearer {ADMIN}"})
        assert r.json()["removed"]["provider"] == 1 and emu.vendors.gemini.caches.list("up") == []
    finally:
        a.server.stop()
        b.server.stop()
