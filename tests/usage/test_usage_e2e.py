"""End to end: official SDK → gateway (with the usage stage and its admin routes) → vendor emulator.

For every protocol, stream and not, the second call of a long prompt reads the emulator's prompt
cache; the usage record of that request must carry exactly the usage the emulator reported (what
the SDK saw, the gateway relaying it untouched) and normalize it without double counting.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from gateway.stores.memory import MemoryStore
from gateway.usage.stage import UsageStage
from gateway_dev.localrun import LocalGateway, UvicornThread

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

KEY = "key-usage"
ADMIN = "admin-usage"
TENANT = "usage-e2e"
# ~3000 tokens of stable prefix: above every emulated vendor's caching minimum.
DOC = " ".join(f"Clause {i}: the service keeps an audit trail of every key rotation and refund." for i in range(180))


class UsageGateway(LocalGateway):
    """The app with only the usage stage in its pipeline (the assembly mounts the usage router)."""

    def start(self) -> UsageGateway:
        from gateway.app import create_app
        from gateway.assembly import build_components

        self.store = MemoryStore()
        self.usage = UsageStage(self.settings, self.store)
        self.components = build_components(self.settings, stages=[self.usage], store=self.store)
        self.app = create_app(self.settings, self.components)
        self.server = UvicornThread(self.app).start()
        return self

    def record(self, request_id: str) -> dict[str, Any]:
        self.wait_idle()
        r = httpx2.get(f"{self.url}/admin/usage/records", params={"tenant": TENANT, "limit": 1000},
                       headers={"authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 200, r.text
        found = [rec for rec in r.json() if rec["request_id"] == request_id]
        assert len(found) == 1, f"no single record for {request_id}"
        return found[0]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UsageGateway]:
    from gateway_dev.emulators.harness import EmulatorSet

    with EmulatorSet() as emu:
        tenants = {TENANT: {"key": KEY, "response_cache": {"enabled": False}}}
        gateway = UsageGateway(emu, tenants, Path(tmp_path_factory.mktemp("usage-e2e")), admin_key=ADMIN)
        with gateway:
            yield gateway


def _twice(call: Any) -> Any:
    call(0)  # writes the emulator's prompt cache
    return call(1)  # reads it


def _same(raw: dict[str, Any], reported: dict[str, Any]) -> None:
    """The record keeps the vendor's usage object exactly as the emulator sent it (= what the SDK saw)."""
    assert raw == reported


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat(gw: UsageGateway, stream: bool) -> None:
    client = gw.openai(KEY)

    def call(i: int) -> tuple[str, dict[str, Any]]:
        msgs = [{"role": "system", "content": DOC + f" chat {stream}"}, {"role": "user", "content": f"q{i}"}]
        if not stream:
            raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
            return raw.headers["x-gateway-request-id"], raw.parse().usage.to_dict()
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs, stream=True,
                                                               stream_options={"include_usage": True})
        chunks = list(raw.parse())
        return raw.headers["x-gateway-request-id"], chunks[-1].usage.to_dict()

    request_id, usage = _twice(call)
    rec = gw.record(request_id)
    details = usage.get("prompt_tokens_details") or {}
    assert details.get("cached_tokens", 0) > 0, usage  # the emulator's cache was read
    _same(rec["usage_raw"], usage)
    assert rec["input_tokens"] == usage["prompt_tokens"]  # cached tokens are inside, not added
    assert rec["cached_input_tokens"] == rec["cache_read_input_tokens"] == details["cached_tokens"]
    assert rec["output_tokens"] == usage["completion_tokens"] and rec["stream"] is stream
    assert 0 < rec["cost_usd"] < rec["cost_without_cache_usd"]


def test_openai_chat_stream_without_include_usage_is_still_metered(gw: UsageGateway) -> None:
    client = gw.openai(KEY)
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "meter me"}], stream=True)
    chunks = list(raw.parse())
    assert all(c.usage is None for c in chunks)  # the client did not ask for usage ...
    rec = gw.record(raw.headers["x-gateway-request-id"])
    assert rec["input_tokens"] > 0 and rec["output_tokens"] > 0  # ... the gateway still metered it


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses(gw: UsageGateway, stream: bool) -> None:
    client = gw.openai(KEY)

    def call(i: int) -> tuple[str, dict[str, Any]]:
        kw = {"model": "gpt-4o", "instructions": DOC + f" responses {stream}", "input": f"q{i}"}
        if not stream:
            raw = client.responses.with_raw_response.create(**kw)
            return raw.headers["x-gateway-request-id"], raw.parse().usage.to_dict()
        raw = client.responses.with_raw_response.create(stream=True, **kw)
        events = list(raw.parse())
        done = next(e for e in events if e.type == "response.completed")
        return raw.headers["x-gateway-request-id"], done.response.usage.to_dict()

    request_id, usage = _twice(call)
    rec = gw.record(request_id)
    assert usage["input_tokens_details"]["cached_tokens"] > 0, usage
    _same(rec["usage_raw"], usage)
    assert rec["input_tokens"] == usage["input_tokens"]
    assert rec["cached_input_tokens"] == usage["input_tokens_details"]["cached_tokens"]
    assert rec["output_tokens"] == usage["output_tokens"] and rec["usage_dialect"] == "openai_responses"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages(gw: UsageGateway, stream: bool) -> None:
    client = gw.anthropic(KEY)

    def call(i: int) -> tuple[str, dict[str, Any]]:
        kw = {"model": "claude-sonnet-4-5", "max_tokens": 64,
              "system": [{"type": "text", "text": DOC + f" messages {stream}", "cache_control": {"type": "ephemeral"}}],
              "messages": [{"role": "user", "content": f"q{i}"}]}
        if not stream:
            raw = client.messages.with_raw_response.create(**kw)
            return raw.headers["x-gateway-request-id"], raw.parse().usage.to_dict()
        with client.messages.stream(**kw) as s:
            message = s.get_final_message()
            return s.response.headers["x-gateway-request-id"], message.usage.to_dict()

    first = call(0)
    rec0 = gw.record(first[0])
    assert rec0["cache_creation_input_tokens"] == first[1]["cache_creation_input_tokens"] > 0
    request_id, usage = call(1)
    rec = gw.record(request_id)
    assert usage["cache_read_input_tokens"] > 0, usage
    _same(rec["usage_raw"], usage)
    # Anthropic's input_tokens excludes the cache: the record adds reads and writes back in.
    assert rec["input_tokens"] == (usage["input_tokens"] + usage["cache_read_input_tokens"]
                                   + (usage.get("cache_creation_input_tokens") or 0))
    assert rec["cached_input_tokens"] == usage["cache_read_input_tokens"]
    assert rec["output_tokens"] == usage["output_tokens"] and rec["usage_dialect"] == "anthropic"
    assert 0 < rec["cost_usd"] < rec["cost_without_cache_usd"]
    assert rec0["cost_usd"] > rec0["cost_without_cache_usd"]  # the write premium


@pytest.mark.parametrize("stream", [False, True])
def test_gemini(gw: UsageGateway, stream: bool) -> None:
    from google.genai import types

    client = gw.gemini(KEY)
    config = types.GenerateContentConfig(system_instruction=DOC + f" gemini {stream}")

    def call(i: int) -> tuple[str, dict[str, Any]]:
        if not stream:
            r = client.models.generate_content(model="gemini-2.5-flash", contents=f"q{i}", config=config)
        else:
            r = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents=f"q{i}",
                                                           config=config))[-1]
        headers = r.sdk_http_response.headers if r.sdk_http_response else {}
        return headers.get("x-gateway-request-id", ""), r.usage_metadata.model_dump(
            mode="json", by_alias=True, exclude_none=True)

    request_id, usage = _twice(call)
    assert request_id.startswith("gw-")
    rec = gw.record(request_id)
    assert usage.get("cachedContentTokenCount", 0) > 0, usage
    _same(rec["usage_raw"], usage)
    assert rec["input_tokens"] == usage["promptTokenCount"] + usage.get("toolUsePromptTokenCount", 0)
    assert rec["cached_input_tokens"] == usage["cachedContentTokenCount"]
    assert rec["output_tokens"] == usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)
    assert rec["usage_dialect"] == "gemini"


@pytest.mark.parametrize("stream", [False, True])
def test_deepseek(gw: UsageGateway, stream: bool) -> None:
    client = gw.openai(KEY)

    def call(i: int) -> tuple[str, dict[str, Any]]:
        msgs = [{"role": "system", "content": DOC + f" deepseek {stream}"}, {"role": "user", "content": f"q{i}"}]
        if not stream:
            raw = client.chat.completions.with_raw_response.create(model="deepseek-chat", messages=msgs)
            return raw.headers["x-gateway-request-id"], raw.parse().usage.to_dict()
        raw = client.chat.completions.with_raw_response.create(model="deepseek-chat", messages=msgs, stream=True,
                                                               stream_options={"include_usage": True})
        return raw.headers["x-gateway-request-id"], list(raw.parse())[-1].usage.to_dict()

    request_id, usage = _twice(call)
    rec = gw.record(request_id)
    assert usage["prompt_cache_hit_tokens"] > 0, usage
    _same(rec["usage_raw"], usage)
    assert rec["input_tokens"] == usage["prompt_tokens"] == usage["prompt_cache_hit_tokens"] + usage[
        "prompt_cache_miss_tokens"]
    assert rec["cached_input_tokens"] == usage["prompt_cache_hit_tokens"]  # never added to the miss count twice
    assert rec["usage_dialect"] == "deepseek" and rec["provider"] == "deepseek"
    assert rec["price_source"] == "litellm:deepseek/deepseek-chat"


def test_totals_equal_the_records_and_metrics_are_exposed(gw: UsageGateway) -> None:
    gw.wait_idle()
    auth = {"authorization": f"Bearer {ADMIN}"}
    totals = httpx2.get(f"{gw.url}/admin/usage", params={"tenant": TENANT}, headers=auth).json()
    records = httpx2.get(f"{gw.url}/admin/usage/records", params={"tenant": TENANT, "limit": 10_000},
                         headers=auth).json()
    assert totals["requests"] == len(records) > 0
    for name in ("input_tokens", "cached_input_tokens", "cache_creation_input_tokens", "output_tokens"):
        assert totals[name] == sum(r[name] for r in records)
    assert totals["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in records))
    metrics = httpx2.get(f"{gw.url}/metrics").text
    assert f'gateway_tokens_total{{kind="cached_input",provider="anthropic",tenant="{TENANT}"}}' in metrics
    # this gateway runs the usage stage alone: no cache layer is consulted, so every request is a bypass
    assert f'gateway_requests_total{{cache="bypass",model="deepseek-chat",provider="deepseek",tenant="{TENANT}"}}' \
        in metrics
    assert "gateway_request_duration_seconds_bucket" in metrics
