"""Acceptance suite of the semantic cache: official SDKs → the gateway (uvicorn, real app, the usage,
response-cache and semantic stages) → the vendor emulators; qdrant-edge embedded under the data dir
(and a dead Qdrant server for the outage test); the packaged embedding model; a clock the tests move.
"""

from __future__ import annotations

import random
import string
import time
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

from gateway.app import create_app
from gateway.assembly import Components, build_components
from gateway.cache import ResponseCacheStage
from gateway.config import Settings
from gateway.semantic.embedder import Embedder
from gateway.semantic.stage import SemanticCacheStage
from gateway.stores import open_store
from gateway.usage.query import records
from gateway.usage.stage import UsageStage
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import UvicornThread, write_policies

from ._helpers import use_backend

ADMIN = "adm-" + "s" * 20
KEYS = {"acme": "sk-acme-sem-01", "globex": "sk-globex-sem-01", "semonly": "sk-semonly-01"}
# verify_share 0: with the default 2 % a would-be hit goes upstream for verification now and then,
# and a test that expects a hit would fail at random
SEMANTIC = {"enabled": True, "threshold": 0.90, "ttl": "1h", "version": "kb-1", "verify_share": 0.0}
TENANTS: dict[str, dict[str, Any]] = {
    name: {"key": key, "semantic_cache": dict(SEMANTIC)} for name, key in KEYS.items()}
TENANTS["semonly"]["response_cache"] = {"enabled": False}
PROTOCOLS = ["openai_chat", "openai_responses", "anthropic_messages", "gemini"]
UPSTREAM = {"openai_chat": "openai.chat", "openai_responses": "openai", "anthropic_messages": "anthropic",
            "gemini": "gemini"}


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@dataclass
class Gateway:
    url: str
    server: UvicornThread
    parts: Components
    stage: SemanticCacheStage
    emu: EmulatorSet
    clock: Clock
    folder: Path

    def calls(self, protocol: str) -> int:
        return self.emu.calls(UPSTREAM[protocol])

    def admin(self) -> httpx2.Client:
        return httpx2.Client(base_url=self.url, headers={"authorization": f"Bearer {ADMIN}"})


def _start(emu: EmulatorSet, folder: Path, **extra: Any) -> Gateway:
    write_policies(folder / "policies", TENANTS)
    settings = Settings(
        policies=folder / "policies", data_dir=folder / "data", admin_key=ADMIN,
        openai_api_key="sk-up", anthropic_api_key="sk-up", gemini_api_key="up", deepseek_api_key="sk-up",
        openai_base_url=emu.openai_base_url, anthropic_base_url=emu.anthropic_base_url,
        gemini_base_url=emu.gemini_base_url, deepseek_base_url=emu.deepseek_base_url, **extra,
    )
    store = open_store(settings)
    clock = Clock()
    semantic = SemanticCacheStage(settings, embedder=Embedder(use_backend()), clock=clock)
    response = ResponseCacheStage(store, idle_timeout=settings.read_timeout)
    parts = build_components(settings, store=store, stages=[UsageStage(settings, store), response, semantic])
    parts.purgers["response"] = response.purge
    parts.purgers["semantic"] = semantic.purge
    server = UvicornThread(create_app(settings, parts)).start()
    return Gateway(server.url, server, parts, semantic, emu, clock, folder)


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet() as emulators:
        yield emulators


@pytest.fixture(scope="module")
def gw(emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gateway = _start(emu, tmp_path_factory.mktemp("semantic"))
    try:
        yield gateway
    finally:
        gateway.server.stop()


def name() -> str:
    """A made-up product name per test, so tests never meet each other's entries."""
    return "".join(random.choice(string.ascii_lowercase) for _ in range(7)).capitalize()


@dataclass
class Reply:
    cache: str | None
    similarity: str | None
    text: str


def ask(gw: Gateway, protocol: str, question: str, *, stream: bool = False, tenant: str = "acme",
        system: str | None = None, model: str | None = None, headers: dict[str, str] | None = None) -> Reply:
    key, extra = KEYS[tenant], headers or {}
    clients: list[Any] = []
    try:
        if protocol in ("openai_chat", "openai_responses"):
            client = openai.OpenAI(base_url=gw.url + "/v1", api_key=key, max_retries=0)
            clients.append(client)
            if protocol == "openai_chat":
                messages = ([{"role": "system", "content": system}] if system else []) + [
                    {"role": "user", "content": question}]
                raw = client.chat.completions.with_raw_response.create(
                    model=model or "gpt-4o-mini", messages=messages, stream=stream, extra_headers=extra)
                if stream:
                    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
                else:
                    text = raw.parse().choices[0].message.content or ""
            else:
                # store=False: a stored response can be chained by id, so only unstored ones take semantic hits
                kw: dict[str, Any] = {"instructions": system} if system else {}
                kw["store"] = False
                raw = client.responses.with_raw_response.create(model=model or "gpt-4o-mini", input=question,
                                                                stream=stream, extra_headers=extra, **kw)
                if stream:
                    text = "".join(e.delta for e in raw.parse() if e.type == "response.output_text.delta")
                else:
                    text = raw.parse().output_text
            return Reply(raw.headers.get("x-gateway-cache"), raw.headers.get("x-gateway-similarity"), text)
        if protocol == "anthropic_messages":
            client = anthropic.Anthropic(base_url=gw.url, api_key=key, max_retries=0)
            clients.append(client)
            kw = {"system": system} if system else {}
            raw = client.messages.with_raw_response.create(
                model=model or "claude-haiku-4-5", max_tokens=200, messages=[{"role": "user", "content": question}],
                stream=stream, extra_headers=extra, **kw)
            if stream:
                text = "".join(e.delta.text for e in raw.parse()
                               if e.type == "content_block_delta" and e.delta.type == "text_delta")
            else:
                text = "".join(b.text for b in raw.parse().content if b.type == "text")
            return Reply(raw.headers.get("x-gateway-cache"), raw.headers.get("x-gateway-similarity"), text)
        gclient = genai.Client(api_key=key, http_options=genai_types.HttpOptions(base_url=gw.url, headers=extra))
        clients.append(gclient)
        config = genai_types.GenerateContentConfig(system_instruction=system) if system else None
        if stream:
            chunks = list(gclient.models.generate_content_stream(model=model or "gemini-2.5-flash", contents=question,
                                                                 config=config))
            head = chunks[0].sdk_http_response.headers if chunks[0].sdk_http_response else {}
            return Reply(head.get("x-gateway-cache"), head.get("x-gateway-similarity"),
                         "".join(c.text or "" for c in chunks))
        resp = gclient.models.generate_content(model=model or "gemini-2.5-flash", contents=question, config=config)
        head = resp.sdk_http_response.headers if resp.sdk_http_response else {}
        return Reply(head.get("x-gateway-cache"), head.get("x-gateway-similarity"), resp.text or "")
    finally:
        for c in clients:
            c.close()


def count(gw: Gateway, tenant: str = "acme") -> int:
    return int(gw.server.call(gw.stage.store.count(tenant)))  # type: ignore[union-attr]


def stored(gw: Gateway, protocol: str, question: str, tenant: str = "acme", **kw: Any) -> Reply:
    """Ask once (a miss answered upstream) and wait until the background write has landed."""
    before = count(gw, tenant)
    first = ask(gw, protocol, question, tenant=tenant, **kw)
    assert first.cache == "miss" and first.text
    deadline = time.monotonic() + 10
    while count(gw, tenant) == before:
        assert time.monotonic() < deadline, "the answer was never written"
        time.sleep(0.02)
    return first


def settle(gw: Gateway) -> None:
    """Give a response's after() time to schedule its write, then wait for every write."""
    time.sleep(0.2)
    gw.server.call(gw.stage.drain())


# ---- acceptance ------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("stream", [False, True])
def test_paraphrase_is_a_semantic_hit_with_the_cached_answer(gw: Gateway, protocol: str, stream: bool) -> None:
    product = name()
    first = stored(gw, protocol, f"How do I export a report from {product} to PDF?")
    before = gw.calls(protocol)
    again = ask(gw, protocol, f"In {product}, how can I export a report to PDF?", stream=stream)
    assert again.cache == "semantic-hit"
    assert again.text == first.text
    assert again.similarity is not None and 0.9 <= float(again.similarity) <= 1.0
    assert gw.calls(protocol) == before  # no upstream call


def test_another_tenant_misses_even_with_the_identical_question(gw: Gateway) -> None:
    question = f"How do I export a report from {name()} to PDF?"
    stored(gw, "openai_chat", question, tenant="acme")
    assert ask(gw, "openai_chat", question, tenant="globex").cache == "miss"


def test_another_system_prompt_or_model_misses(gw: Gateway) -> None:
    product = name()
    stored(gw, "openai_chat", f"How do I export a report from {product} to PDF?", system="You are support.")
    paraphrase = f"In {product}, how can I export a report to PDF?"
    assert ask(gw, "openai_chat", paraphrase, system="You are support.").cache == "semantic-hit"
    assert ask(gw, "openai_chat", paraphrase, system="You are sales.").cache == "miss"
    assert ask(gw, "openai_chat", paraphrase, system="You are support.", model="gpt-4o").cache == "miss"


def test_a_one_slot_edit_misses(gw: Gateway) -> None:
    product = name()
    stored(gw, "anthropic_messages", f"How do I export a report from {product} to PDF?")
    assert ask(gw, "anthropic_messages", f"How do I export a report from {product} to Excel?").cache == "miss"
    assert ask(gw, "anthropic_messages", f"How do I import a report from {product} to PDF?").cache == "miss"


def test_expired_entry_misses(gw: Gateway) -> None:
    product = name()
    stored(gw, "openai_chat", f"How do I export a report from {product} to PDF?")
    paraphrase = f"In {product}, how can I export a report to PDF?"
    assert ask(gw, "openai_chat", paraphrase).cache == "semantic-hit"
    gw.clock.offset += 3601  # the policy's ttl is 1h
    try:
        assert ask(gw, "openai_chat", paraphrase).cache == "miss"
    finally:
        gw.clock.offset -= 3601


def test_version_bump_through_policy_reload_misses_and_purge_removes(gw: Gateway) -> None:
    product = name()
    stored(gw, "gemini", f"How do I export a report from {product} to PDF?")
    paraphrase = f"In {product}, how can I export a report to PDF?"
    assert ask(gw, "gemini", paraphrase).cache == "semantic-hit"
    admin = gw.admin()
    bumped = {n: {**spec, "semantic_cache": {**SEMANTIC, "version": "kb-2"}} for n, spec in TENANTS.items()}
    write_policies(gw.folder / "policies", bumped)
    try:
        assert admin.post("/admin/policies/reload").status_code == 200
        assert ask(gw, "gemini", paraphrase).cache == "miss"
        removed = admin.post("/admin/cache/purge", json={"tenant": "acme", "layer": "semantic", "version": "kb-1"})
        assert removed.status_code == 200 and removed.json()["removed"]["semantic"] >= 1
    finally:
        write_policies(gw.folder / "policies", TENANTS)
        admin.post("/admin/policies/reload")
        admin.close()


def test_no_store_is_never_written_and_no_cache_skips_the_lookup(gw: Gateway) -> None:
    product = name()
    question = f"How do I export a report from {product} to PDF?"
    paraphrase = f"In {product}, how can I export a report to PDF?"
    before = count(gw)
    assert ask(gw, "openai_chat", question, headers={"cache-control": "no-store"}).cache in ("miss", "bypass")
    settle(gw)
    assert count(gw) == before
    assert ask(gw, "openai_chat", paraphrase).cache == "miss"
    settle(gw)
    assert ask(gw, "openai_chat", question, headers={"cache-control": "no-cache"}).cache in ("miss", "bypass")


def test_qdrant_unavailable_requests_succeed(emu: EmulatorSet, tmp_path: Path) -> None:
    down = _start(emu, tmp_path, qdrant_url="http://127.0.0.1:9")
    try:
        product = name()
        for protocol in ("openai_chat", "anthropic_messages"):
            first = ask(down, protocol, f"How do I export a report from {product} to PDF?")
            again = ask(down, protocol, f"In {product}, how can I export a report to PDF?", stream=True)
            assert first.cache == "miss" and first.text and again.cache == "miss" and again.text
    finally:
        down.server.stop()


def test_stored_responses_skip_the_semantic_layer(gw: Gateway) -> None:
    """A Responses answer OpenAI stored can be chained by id: another question's answer must not be
    handed out under it, so `store` not false skips the layer."""
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=KEYS["acme"], max_retries=0)
    settle(gw)
    before = count(gw, "acme")  # the gateway is shared by the module: earlier tests wrote for acme
    first = client.responses.with_raw_response.create(model="gpt-4o-mini", input="How do I export a report to PDF?")
    assert first.headers["x-gateway-cache"] in ("miss", "bypass")
    settle(gw)
    assert count(gw, "acme") == before  # never written
    again = client.responses.with_raw_response.create(model="gpt-4o-mini", input="How can I export a report as PDF?")
    assert again.headers["x-gateway-cache"] != "semantic-hit"


def test_a_semantic_lookup_that_misses_is_a_miss_not_a_bypass(gw: Gateway) -> None:
    """With the response cache off, the semantic layer still looked the question up: `miss`, in the
    header and in the usage record (`bypass` means no layer was consulted)."""
    product = name()
    reply = ask(gw, "openai_chat", f"How do I reset the password of my {product} account?", tenant="semonly")
    assert reply.cache == "miss"
    newest: list[dict[str, Any]] = []
    deadline = time.monotonic() + 5
    while not newest and time.monotonic() < deadline:
        time.sleep(0.2)  # the recorder flushes in the background
        newest = gw.server.call(records(gw.parts.store, "semonly", 5))
    assert newest and newest[0]["gateway_cache"] == "miss"
    skipped = ask(gw, "openai_chat", f"How do I reset the password of my {product} account?", tenant="semonly",
                  headers={"Cache-Control": "no-store"})
    assert skipped.cache == "bypass"  # no layer consulted
