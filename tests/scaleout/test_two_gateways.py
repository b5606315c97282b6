"""Two gateway processes sharing one Redis: every shared fact is in the store, none in a process.

Each gateway is `python -m gateway serve` in its own process (`GatewayProcess`), both pointed at
one real redis-server and at the vendor emulators (which count the upstream calls). Clients are the
official SDKs. What is proven, each in its test:
- 50 concurrent identical new requests spread over both gateways → one upstream call;
- a Gemini CachedContent is created once, whichever gateway the requests reach;
- an answer cached through one gateway is a hit through the other;
- usage totals read from either gateway's admin API are the same, and add up both's traffic;
- a session (`x-gateway-session`) goes to the same vLLM replica whichever gateway receives it: the
  session → replica binding is routing state in the store (gateway/routing/sessions.py).

The semantic cache is not shared here: without GATEWAY_QDRANT_URL each process has its own embedded
Qdrant engine (qdrant-edge, one process per folder); production points every replica at one Qdrant
server (docs/deploy.md, Capacity).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from redis import Redis
from sdk_support import ask_chat

from gateway_dev.bench.common import GatewayProcess
from gateway_dev.emulators.harness import EmulatorSet

ADMIN = "bench-admin"  # GatewayProcess's admin key
KEYS = {"acme": "sk-acme-2gw", "gem": "sk-gem-2gw", "metered": "sk-metered-2gw", "route": "sk-route-2gw"}
TENANTS: dict[str, dict[str, Any]] = {
    "acme": {"key": KEYS["acme"]},
    "gem": {"key": KEYS["gem"], "response_cache": {"enabled": False},
            "provider_cache": {"gemini": {"enabled": True, "ttl": "1h", "min_expected_reuses": 10}}},
    "metered": {"key": KEYS["metered"]},
    "route": {"key": KEYS["route"], "response_cache": {"enabled": False}},
}
VLLM_MODEL = "Qwen/Qwen3-8B"  # what the emulated replicas serve
REPLICAS = 3
HANDBOOK = " ".join(f"Rule {i}: items bought in category {i} may be returned within {i + 10} days." for i in range(230))
SYSTEM = f"You are Acme's support assistant. {HANDBOOK}"  # ~2,700 tokens: over Gemini's caching minimum


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(vllm_replicas=REPLICAS) as e:
        yield e


@pytest.fixture(scope="module")
def pair(emu: EmulatorSet, redis_server: Any) -> Iterator[tuple[GatewayProcess, GatewayProcess]]:
    a, b = (GatewayProcess(emu.vendor_url, TENANTS, vllm_urls=list(emu.vllm_urls), redis_url=redis_server.url)
            for _ in range(2))
    # Started side by side: each takes seconds to import and warm up.
    threads = [threading.Thread(target=g.start) for g in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    try:
        assert a.proc is not None and b.proc is not None, "a gateway process did not start"
        yield a, b
    finally:
        a.stop()
        b.stop()


@pytest.fixture(autouse=True)
def _clear_faults(emu: EmulatorSet) -> Iterator[None]:
    yield
    emu.faults.clear_all()


def _chat(url: str, tenant: str, prompt: str) -> tuple[str | None, str]:
    with openai.OpenAI(base_url=url + "/v1", api_key=KEYS[tenant], max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}])
        return raw.headers.get("x-gateway-cache"), raw.parse().choices[0].message.content or ""


def _messages(url: str, tenant: str, prompt: str) -> tuple[str | None, str]:
    with anthropic.Anthropic(base_url=url, api_key=KEYS[tenant], max_retries=0) as client:
        raw = client.messages.with_raw_response.create(
            model="claude-haiku-4-5", max_tokens=100, messages=[{"role": "user", "content": prompt}])
        msg = raw.parse()
        return raw.headers.get("x-gateway-cache"), "".join(b.text for b in msg.content if b.type == "text")


async def test_fifty_concurrent_identical_new_requests_over_two_gateways_make_one_upstream_call(
        pair: tuple[GatewayProcess, GatewayProcess], emu: EmulatorSet) -> None:
    prompt = f"Two replicas, one herd {uuid.uuid4().hex}"
    emu.faults.openai.set_always("slow_first_byte=0.5")  # every request arrives while the first is upstream
    before = emu.calls("openai.chat")
    limits = httpx2.Limits(max_connections=100, max_keepalive_connections=100)
    clients = [openai.AsyncOpenAI(base_url=g.url + "/v1", api_key=KEYS["acme"], max_retries=0,
                                  http_client=httpx2.AsyncClient(limits=limits, timeout=60)) for g in pair]

    async def one(i: int) -> tuple[str | None, str]:
        return await ask_chat(clients[i % 2], prompt, stream=i % 4 == 0)  # some stream, most do not

    try:
        results = await asyncio.gather(*(one(i) for i in range(50)))
    finally:
        emu.faults.openai.clear()
        for c in clients:
            await c.close()
    assert emu.calls("openai.chat") - before == 1
    texts = {text for _, text in results}
    assert len(texts) == 1 and texts.pop()
    # the leader and every follower (in its process or the other) answer `miss`: nothing was cached yet
    assert [status for status, _ in results] == ["miss"] * 50


def test_an_answer_cached_by_one_gateway_is_a_hit_on_the_other(pair: tuple[GatewayProcess, GatewayProcess],
                                                                emu: EmulatorSet) -> None:
    a, b = pair
    for ask, vendor in ((_chat, "openai.chat"), (_messages, "anthropic.messages")):
        first_prompt, second_prompt = (f"Shared answer {vendor} {i} {uuid.uuid4().hex}" for i in range(2))
        before = emu.calls(vendor)
        miss = ask(a.url, "acme", first_prompt)
        hit = ask(b.url, "acme", first_prompt)
        assert (miss[0], hit[0]) == ("miss", "response-hit") and hit[1] == miss[1]
        # and the other way round
        assert ask(b.url, "acme", second_prompt)[0] == "miss"
        assert ask(a.url, "acme", second_prompt)[0] == "response-hit"
        assert emu.calls(vendor) - before == 2


def _generate(url: str, question: str) -> Any:
    client = genai.Client(api_key=KEYS["gem"], http_options=genai_types.HttpOptions(base_url=url))
    try:
        return client.models.generate_content(
            model="gemini-2.5-flash", contents=question,
            config=genai_types.GenerateContentConfig(system_instruction=SYSTEM))
    finally:
        client.close()


def test_a_gemini_cached_content_is_created_once_for_both_gateways(pair: tuple[GatewayProcess, GatewayProcess],
                                                                    emu: EmulatorSet) -> None:
    creates = emu.calls("gemini.cachedContents.create")
    errors: list[BaseException] = []

    def ask(url: str, i: int) -> None:
        try:
            _generate(url, f"Question {i}: what does rule {i} say?")
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(g.url, i)) for i, g in enumerate(list(pair) * 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert emu.calls("gemini.cachedContents.create") - creates == 1
    names = set()
    for i, g in enumerate(pair):
        reply = _generate(g.url, f"Follow-up {i}: and rule {i + 50}?")
        assert reply.usage_metadata.cached_content_token_count > 2000
        names.add(emu.requests("gemini.generateContent")[-1].body["cachedContent"])
    assert len(names) == 1  # both gateways reference the one cache
    assert emu.calls("gemini.cachedContents.create") - creates == 1


def _totals(url: str, tenant: str) -> dict[str, Any]:
    r = httpx2.get(url + "/admin/usage", params={"tenant": tenant}, headers={"authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 200, r.text
    return r.json()


def test_usage_totals_read_from_either_gateway_are_the_same(pair: tuple[GatewayProcess, GatewayProcess]) -> None:
    a, b = pair
    prompts = [f"Metered {i} {uuid.uuid4().hex}" for i in range(6)]
    for p in prompts:
        assert _chat(a.url, "metered", p)[0] == "miss"
    for p in prompts:
        assert _chat(b.url, "metered", p)[0] == "response-hit"
    assert _messages(b.url, "metered", prompts[0])[0] == "miss"
    # Each process flushes its own buffer (every 0.5 s, and before answering /admin/usage); both
    # then read the same aggregates from Redis.
    deadline = time.monotonic() + 15
    while True:
        seen = [_totals(g.url, "metered") for g in (a, b, a)]
        if (seen[0]["requests"] == 13 and seen[0] == seen[1] == seen[2]) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    from_a, from_b = seen[0], seen[1]
    assert from_a == from_b
    assert from_a["requests"] == 13 and from_a["misses"] == 7 and from_a["hits"]["response"] == 6
    assert from_a["upstream"]["requests"] == 7 and from_a["saved_usd"] > 0 and from_a["cost_usd"] > 0


def _counts(emu: EmulatorSet) -> list[int]:
    return [emu.calls(f"vllm{i}.chat") for i in range(REPLICAS)]


def test_the_same_session_routes_to_the_same_replica_from_either_gateway(
        pair: tuple[GatewayProcess, GatewayProcess], emu: EmulatorSet, redis_server: Any) -> None:
    clients = [openai.OpenAI(base_url=g.url + "/v1", api_key=KEYS["route"], max_retries=0) for g in pair]
    sessions = [f"chat-{uuid.uuid4().hex[:10]}" for _ in range(8)]
    placed: dict[str, int] = {}
    try:
        for s in sessions:
            before = _counts(emu)
            clients[0].chat.completions.create(
                model=VLLM_MODEL, messages=[{"role": "user", "content": f"{s}: first turn"}],
                extra_headers={"x-gateway-session": s}, max_tokens=8)
            moved = [b - a for a, b in zip(before, _counts(emu), strict=True)]
            assert sum(moved) == 1, moved
            placed[s] = moved.index(1)
        # Spread over replicas: were they all on one, both gateways would agree without sharing anything.
        assert len(set(placed.values())) >= 2, placed
        for turn in range(1, 5):
            for s in sessions:
                before = _counts(emu)
                clients[turn % 2].chat.completions.create(
                    model=VLLM_MODEL, messages=[{"role": "user", "content": f"{s}: turn {turn}"}],
                    extra_headers={"x-gateway-session": s}, max_tokens=8)
                moved = [b - a for a, b in zip(before, _counts(emu), strict=True)]
                assert moved.index(1) == placed[s], (s, turn, placed[s], moved)
    finally:
        for c in clients:
            c.close()
    with Redis.from_url(redis_server.url) as r:
        bindings = list(r.scan_iter(match="gw:route:*", count=1000))
    assert len(bindings) >= len(sessions)
