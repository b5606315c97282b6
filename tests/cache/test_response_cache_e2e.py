"""Acceptance suite of the exact response cache: official SDKs → the gateway (uvicorn, real app)
→ the vendor emulators, with the store embedded, on a real redis-server, or on a real 3-primary
Redis Cluster (every test runs on each).

Upstream calls are counted by the emulators; `x-gateway-cache` is read from the SDKs' raw responses.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from sdk_support import ask_chat

from gateway.app import create_app
from gateway.assembly import Components, build_components
from gateway.cache import ResponseCacheStage
from gateway.config import Settings
from gateway.usage.query import records
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import UvicornThread, write_policies
from gateway_dev.redis_servers import poll

ADMIN = "adm-" + "x" * 20
KEYS = {"acme": "sk-acme-0001", "globex": "sk-globex-0001", "solo": "sk-solo-0001", "brief": "sk-brief-0001"}
TENANTS = {
    "acme": {"key": KEYS["acme"]},
    "globex": {"key": KEYS["globex"]},
    "solo": {"key": KEYS["solo"], "response_cache": {"scope": "user"}},
    "brief": {"key": KEYS["brief"], "response_cache": {"ttl": "1s"}},
}
PROTOCOLS = ["openai_chat", "openai_responses", "anthropic_messages", "gemini"]
UPSTREAM = {"openai_chat": "openai.chat", "openai_responses": "openai", "anthropic_messages": "anthropic",
            "gemini": "gemini"}


@dataclass
class Gateway:
    url: str
    server: UvicornThread
    parts: Components
    emu: EmulatorSet

    def calls(self, protocol: str = "openai_chat") -> int:
        return self.emu.calls(UPSTREAM[protocol])


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet() as emulators:
        yield emulators


def _settings(emu: EmulatorSet, tmp: Path, redis_url: str | None) -> Settings:
    write_policies(tmp / "policies", TENANTS)
    return Settings(
        policies=tmp / "policies", data_dir=tmp / "data", redis_url=redis_url, admin_key=ADMIN,
        openai_api_key="sk-up", anthropic_api_key="sk-up", gemini_api_key="up", deepseek_api_key="sk-up",
        openai_base_url=emu.openai_base_url, anthropic_base_url=emu.anthropic_base_url,
        gemini_base_url=emu.gemini_base_url, deepseek_base_url=emu.deepseek_base_url,
        # these tests are about what is cached for whom; a loaded machine must not turn a slow store
        # write into a fail-open miss (the deadline has its own outage tests)
        store_timeout=2.0,
    )


def _start(settings: Settings, emu: EmulatorSet) -> Gateway:
    """The gateway as `serve` assembles it (every layer; the tenants' policies leave the semantic
    cache and prompt rewriting off), on a loopback port."""
    parts = build_components(settings)
    assert isinstance(parts.pipeline.stage("response_cache"), ResponseCacheStage)
    assert "response" in parts.purgers
    server = UvicornThread(create_app(settings, parts)).start()
    return Gateway(server.url, server, parts, emu)


@pytest.fixture(scope="module", params=["memory", "redis", "cluster"])
def gw(request: pytest.FixtureRequest, emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    servers = {"redis": "redis_server", "cluster": "redis_cluster"}  # cluster: a 3-primary Redis Cluster
    redis_url = request.getfixturevalue(servers[request.param]).url if request.param in servers else None
    gateway = _start(_settings(emu, tmp_path_factory.mktemp(request.param), redis_url), emu)
    try:
        yield gateway
    finally:
        gateway.server.stop()


def _prompt(label: str = "") -> str:
    return f"Explain caching {label} {uuid.uuid4().hex[:8]}"


# ---- one request through each official SDK -------------------------------------------------


@dataclass
class Reply:
    cache: str | None
    text: str
    finish: str


def ask(gw: Gateway, protocol: str, prompt: str, *, stream: bool = False, tenant: str = "acme",
        headers: dict[str, str] | None = None, **params: Any) -> Reply:
    clients: list[Any] = []
    try:
        return _ask(gw, protocol, prompt, stream, tenant, headers or {}, clients, **params)
    finally:
        for client in clients:  # no idle keep-alive connections left to hold the server's shutdown
            client.close()


def _ask(gw: Gateway, protocol: str, prompt: str, stream: bool, tenant: str, extra: dict[str, str],
         clients: list[Any], **params: Any) -> Reply:
    key = KEYS[tenant]
    if protocol == "openai_chat":
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key=key, max_retries=0)
        clients.append(client)
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], stream=stream,
            extra_headers=extra, **params)
        if not stream:
            done = raw.parse()
            return Reply(raw.headers.get("x-gateway-cache"), done.choices[0].message.content or "",
                         done.choices[0].finish_reason)
        text, finish = "", ""
        for chunk in raw.parse():
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
        return Reply(raw.headers.get("x-gateway-cache"), text, finish)
    if protocol == "openai_responses":
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key=key, max_retries=0)
        clients.append(client)
        raw = client.responses.with_raw_response.create(model="gpt-4o-mini", input=prompt, stream=stream,
                                                        extra_headers=extra, **params)
        if not stream:
            done = raw.parse()
            return Reply(raw.headers.get("x-gateway-cache"), done.output_text, done.status or "")
        text, status = "", ""
        for event in raw.parse():
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.completed":
                status = event.response.status or ""
                assert event.response.output_text == text
        return Reply(raw.headers.get("x-gateway-cache"), text, status)
    if protocol == "anthropic_messages":
        client = anthropic.Anthropic(base_url=gw.url, api_key=key, max_retries=0)
        clients.append(client)
        raw = client.messages.with_raw_response.create(
            model="claude-haiku-4-5", max_tokens=200, messages=[{"role": "user", "content": prompt}], stream=stream,
            extra_headers=extra, **params)
        if not stream:
            msg = raw.parse()
            return Reply(raw.headers.get("x-gateway-cache"), "".join(b.text for b in msg.content if b.type == "text"),
                         msg.stop_reason or "")
        text, stop = "", ""
        for event in raw.parse():
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                text += event.delta.text
            elif event.type == "message_delta":
                stop = event.delta.stop_reason or stop
        return Reply(raw.headers.get("x-gateway-cache"), text, stop)
    client = genai.Client(api_key=key, http_options=genai_types.HttpOptions(base_url=gw.url, headers=extra))
    clients.append(client)
    if not stream:
        resp = client.models.generate_content(model="gemini-2.5-flash", contents=prompt)
        headers_in = resp.sdk_http_response.headers if resp.sdk_http_response else {}
        return Reply(headers_in.get("x-gateway-cache"), resp.text or "", str(resp.candidates[0].finish_reason))
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents=prompt))
    headers_in = chunks[0].sdk_http_response.headers if chunks[0].sdk_http_response else {}
    finish = next((str(c.candidates[0].finish_reason) for c in reversed(chunks)
                   if c.candidates and c.candidates[0].finish_reason), "")
    return Reply(headers_in.get("x-gateway-cache"), "".join(c.text or "" for c in chunks), finish)


# ---- acceptance ------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_hit_on_repeat(gw: Gateway, protocol: str) -> None:
    prompt = _prompt(protocol)
    before = gw.calls(protocol)
    first = ask(gw, protocol, prompt)
    second = ask(gw, protocol, prompt)
    assert (first.cache, second.cache) == ("miss", "response-hit")
    assert second.text == first.text and second.finish == first.finish and first.text
    assert gw.calls(protocol) - before == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("stored_as_stream", "asked_as_stream"), [(False, True), (True, False), (True, True)])
def test_stream_and_non_stream_replay(gw: Gateway, protocol: str, stored_as_stream: bool,
                                      asked_as_stream: bool) -> None:
    prompt = _prompt(protocol)
    before = gw.calls(protocol)
    original = ask(gw, protocol, prompt, stream=stored_as_stream)
    replay = ask(gw, protocol, prompt, stream=asked_as_stream)
    assert original.cache == "miss" and replay.cache == "response-hit"
    assert replay.text == original.text and replay.finish == original.finish
    assert gw.calls(protocol) - before == 1


def test_tenant_isolation(gw: Gateway) -> None:
    prompt = _prompt("tenants")
    before = gw.calls()
    a = ask(gw, "openai_chat", prompt, tenant="acme")
    b = ask(gw, "openai_chat", prompt, tenant="globex")
    assert (a.cache, b.cache) == ("miss", "miss")
    assert gw.calls() - before == 2
    assert ask(gw, "openai_chat", prompt, tenant="globex").cache == "response-hit"
    assert ask(gw, "openai_chat", prompt, tenant="acme").cache == "response-hit"


def test_user_scope(gw: Gateway) -> None:
    prompt = _prompt("users")
    alice, bob = {"x-gateway-user": "alice"}, {"x-gateway-user": "bob"}
    assert ask(gw, "openai_chat", prompt, tenant="solo", headers=alice).cache == "miss"
    assert ask(gw, "openai_chat", prompt, tenant="solo", headers=bob).cache == "miss"
    assert ask(gw, "openai_chat", prompt, tenant="solo", headers=alice).cache == "response-hit"
    assert ask(gw, "openai_chat", prompt, tenant="solo", headers=bob).cache == "response-hit"
    assert ask(gw, "openai_chat", prompt, tenant="solo").cache == "bypass"  # no user: no safe scope


def test_no_cache_and_no_store(gw: Gateway) -> None:
    prompt = _prompt("no-cache")
    before = gw.calls()
    assert ask(gw, "openai_chat", prompt).cache == "miss"
    fresh = ask(gw, "openai_chat", prompt, headers={"cache-control": "no-cache"})
    assert fresh.cache == "bypass"
    assert gw.calls() - before == 2  # looked nothing up: went upstream
    assert ask(gw, "openai_chat", prompt).cache == "response-hit"

    private = _prompt("no-store")
    assert ask(gw, "openai_chat", private, headers={"cache-control": "no-store"}).cache == "bypass"
    assert ask(gw, "openai_chat", private).cache == "miss"  # nothing was stored


def test_ttl_expiry(gw: Gateway) -> None:
    prompt = _prompt("ttl")
    assert ask(gw, "openai_chat", prompt, tenant="brief").cache == "miss"
    assert ask(gw, "openai_chat", prompt, tenant="brief").cache == "response-hit"
    time.sleep(1.3)
    assert ask(gw, "openai_chat", prompt, tenant="brief").cache == "miss"


@pytest.mark.parametrize("protocol", ["openai_chat", "anthropic_messages"])
def test_errors_are_not_stored(gw: Gateway, protocol: str) -> None:
    prompt = _prompt("error")
    vendor = "openai" if protocol == "openai_chat" else "anthropic"
    gw.emu.faults[vendor].inject("status=500")
    with pytest.raises((openai.InternalServerError, anthropic.InternalServerError)):
        ask(gw, protocol, prompt)
    before = gw.calls(protocol)
    assert ask(gw, protocol, prompt).cache == "miss"
    assert gw.calls(protocol) - before == 1
    assert ask(gw, protocol, prompt).cache == "response-hit"


@pytest.mark.parametrize("protocol", ["openai_chat", "anthropic_messages", "gemini"])
@pytest.mark.parametrize("fault", ["cut_stream_after=3", "stream_error_after=2"])
def test_cut_or_failed_streams_are_not_stored(gw: Gateway, protocol: str, fault: str) -> None:
    prompt = _prompt("cut")
    vendor = {"openai_chat": "openai", "anthropic_messages": "anthropic", "gemini": "gemini"}[protocol]
    gw.emu.faults[vendor].inject(fault)
    try:
        broken = ask(gw, protocol, prompt, stream=True)
    except Exception:  # the SDK saw the stream break or the in-stream error
        broken = None
    assert broken is None or not broken.finish
    time.sleep(0.2)  # the post-stages run just after the response
    assert ask(gw, protocol, prompt).cache == "miss"
    assert ask(gw, protocol, prompt).cache == "response-hit"


@pytest.mark.parametrize("stream", [False, True])
async def test_fifty_concurrent_identical_requests_make_one_upstream_call(gw: Gateway, stream: bool) -> None:
    prompt = _prompt("herd")
    gw.emu.faults.openai.set_always("slow_first_byte=0.5")  # everyone arrives while the first is in flight
    before = gw.calls()
    limits = httpx2.Limits(max_connections=100, max_keepalive_connections=100)
    client = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=KEYS["acme"], max_retries=0,
                                http_client=httpx2.AsyncClient(limits=limits, timeout=30))

    async def one(i: int) -> tuple[str | None, str]:
        # a mix: stream followers and whole-answer followers
        return await ask_chat(client, prompt, stream=stream and i % 2 == 0)

    try:
        results = await asyncio.gather(*(one(i) for i in range(50)))
    finally:
        gw.emu.faults.openai.clear()
        await client.close()
    assert gw.calls() - before == 1
    texts = {text for _, text in results}
    assert len(texts) == 1 and texts.pop()
    assert sorted(status or "" for status, _ in results).count("miss") == 50  # leader + coalesced followers


def test_purge_through_the_admin_api(gw: Gateway) -> None:
    prompts = [_prompt("purge") for _ in range(3)]
    for p in prompts:
        ask(gw, "openai_chat", p, tenant="acme")
    ask(gw, "openai_chat", prompts[0], tenant="globex")
    admin = httpx2.Client(base_url=gw.url, headers={"authorization": f"Bearer {ADMIN}"})
    answer = admin.post("/admin/cache/purge", json={"tenant": "acme", "layer": "response"})
    assert answer.status_code == 200
    assert answer.json()["removed"]["response"] >= 3
    assert ask(gw, "openai_chat", prompts[1], tenant="acme").cache == "miss"
    assert ask(gw, "openai_chat", prompts[0], tenant="globex").cache == "response-hit"
    assert admin.post("/admin/cache/purge", json={"tenant": "acme", "layer": "response"}).json() == \
        {"tenant": "acme", "removed": {"response": 1}}  # the one re-stored just above


def test_a_hit_is_a_usage_record_with_cost_zero_and_the_saved_cost(gw: Gateway) -> None:
    prompt = _prompt("usage")
    ask(gw, "anthropic_messages", prompt)
    ask(gw, "anthropic_messages", prompt)
    deadline = time.monotonic() + 5
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline and len(found) < 2:
        time.sleep(0.2)  # the recorder flushes in the background
        newest = gw.server.call(records(gw.parts.store, "acme", 20))
        found = [r for r in newest if r.get("model", "").startswith("claude")][:2]
    hit, miss = found
    assert (hit["gateway_cache"], miss["gateway_cache"]) == ("response-hit", "miss")
    assert hit["cost_usd"] == 0 and miss["cost_usd"] > 0
    assert hit["saved_usd"] == pytest.approx(miss["cost_usd"])
    assert hit["output_tokens"] == miss["output_tokens"] > 0


def test_redis_killed_mid_run_fails_nothing_and_hits_resume(emu: EmulatorSet, own_redis,  # type: ignore[no-untyped-def]
                                                            tmp_path: Path) -> None:
    gw = _start(_settings(emu, tmp_path, own_redis.url), emu)
    failures: list[str] = []
    seen: list[str | None] = []
    stop = threading.Event()
    warm = [_prompt("warm") for _ in range(6)]

    def client(n: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            prompt = warm[i % len(warm)] if i % 3 else _prompt(f"fresh-{n}")  # repeats and new ones
            try:
                seen.append(ask(gw, "openai_chat", prompt).cache)
            except Exception as exc:
                failures.append(repr(exc))

    try:
        for p in warm:
            assert ask(gw, "openai_chat", p).cache == "miss"
        workers = [threading.Thread(target=client, args=(n,)) for n in range(4)]
        for w in workers:
            w.start()
        assert poll(lambda: "response-hit" in seen, 5.0), seen
        own_redis.stop()  # killed like a crash, while four clients keep sending
        mark = len(seen)
        # no stall: 20 more answers come as fast as the clients can ask (seconds, not the minutes a
        # proxy waiting on a dead Redis takes); the bound is loose because this machine is shared.
        assert poll(lambda: len(seen) >= mark + 20, 10), "requests stalled while Redis was down"
        assert set(seen[mark + 4:]) == {"miss"}  # proxied as misses (the first few may have hit just before)
        assert httpx2.get(gw.url + "/readyz").status_code == 200
        own_redis.start()  # an empty Redis: what was stored before is gone
        back = len(seen)
        assert poll(lambda: "response-hit" in seen[back:], 10), seen[back:]  # hits resume
        stop.set()
        for w in workers:
            w.join(10)
        assert failures == [], failures
        ask(gw, "openai_chat", warm[1])
        assert ask(gw, "openai_chat", warm[1]).cache == "response-hit"
    finally:
        stop.set()
        gw.server.stop()




@pytest.fixture(autouse=True)
def _clear_faults(emu: EmulatorSet) -> Iterator[None]:
    yield
    emu.faults.clear_all()
