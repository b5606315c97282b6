"""Model → provider resolution, DeepSeek through the gateway, and configured OpenAI-compatible upstreams."""

from __future__ import annotations

import httpx2
import pytest

from gateway.config import Settings, UpstreamConfig
from gateway.providers import ProviderTable

ADMIN = "admin-key"
KEY = "key-acme"


def table(pool: set[str] | None = None, upstreams: list[UpstreamConfig] | None = None) -> ProviderTable:
    settings = Settings.load(env={}, upstreams=upstreams or [])
    return ProviderTable(settings, (lambda m: m in pool) if pool is not None else None)


@pytest.mark.parametrize(("model", "provider"), [
    ("gpt-4o-mini", "openai"), ("o3-mini", "openai"), ("o4-mini", "openai"), ("text-embedding-3-small", "openai"),
    ("chatgpt-4o-latest", "openai"), ("claude-sonnet-4-6", "anthropic"), ("gemini-2.5-flash", "gemini"),
    ("deepseek-chat", "deepseek"), ("deepseek-reasoner", "deepseek"),
])
def test_builtin_families(model: str, provider: str) -> None:
    found = table().for_model(model, "openai_chat")
    assert found is not None and found.name == provider


def test_unknown_models_and_pool_names() -> None:
    assert table().for_model("llama-3-8b", "openai_chat") is None
    assert table().for_model("vllm/llama", "openai_chat") is None  # no pool configured
    pooled = table(pool={"Qwen/Qwen3-8B", "opt-125m"})
    assert pooled.for_model("Qwen/Qwen3-8B", "openai_chat").name == "vllm"
    assert pooled.for_model("vllm/anything", "openai_chat").name == "vllm"
    assert pooled.for_model("opt-125m", "openai_chat").name == "vllm"  # a pool name wins over the o* family


def test_native_protocols_go_to_their_own_vendor() -> None:
    assert table().for_model("gpt-4o", "anthropic_messages").name == "anthropic"
    assert table().for_model("anything", "gemini").name == "gemini"


def test_configured_upstreams_match_by_pattern_first() -> None:
    qwen = UpstreamConfig(name="qwen", base_url="http://qwen.internal/v1", api_key="env:QWEN_KEY",
                          models=["qwen-*", "gpt-4.1*"], usage_dialect="openai")
    t = table(upstreams=[qwen])
    assert t.for_model("qwen-plus", "openai_chat").name == "qwen"
    assert t.for_model("gpt-4.1-mini", "openai_chat").name == "qwen"
    assert t.for_model("gpt-4o", "openai_chat").name == "openai"
    assert t.get("qwen").spec.key_env == "QWEN_KEY"


def _records(gw, tenant: str = "acme") -> list[dict]:  # type: ignore[no-untyped-def]
    gw.wait_idle()
    r = httpx2.get(f"{gw.url}/admin/usage/records?tenant={tenant}&limit=50",
                   headers={"authorization": f"Bearer {ADMIN}"})
    r.raise_for_status()
    body = r.json()
    return body["records"] if isinstance(body, dict) else body


def test_deepseek_usage_arrives_intact_and_is_normalized(gateway_factory, emulators) -> None:  # type: ignore[no-untyped-def]
    gw = gateway_factory({"acme": {"key": KEY, "response_cache": {"enabled": False}}}, admin_key=ADMIN)
    client = gw.openai(KEY)
    document = "The deployment guide explains every step of the rollout in detail. " * 60
    messages = [{"role": "system", "content": document}, {"role": "user", "content": "Summarize step one."}]
    first = client.chat.completions.create(model="deepseek-chat", messages=messages)
    messages[-1]["content"] = "Summarize step two."
    client.chat.completions.create(model="deepseek-chat", messages=messages)  # the shared prefix becomes a unit
    messages[-1]["content"] = "Summarize step four."
    second = client.chat.completions.create(model="deepseek-chat", messages=messages)
    hit = second.usage.model_extra["prompt_cache_hit_tokens"]
    assert first.usage.model_extra["prompt_cache_hit_tokens"] == 0 and hit > 0
    assert hit + second.usage.model_extra["prompt_cache_miss_tokens"] == second.usage.prompt_tokens
    messages[-1]["content"] = "Summarize step three."
    chunks = list(client.chat.completions.create(model="deepseek-chat", messages=messages, stream=True,
                                                 stream_options={"include_usage": True}))
    streamed = chunks[-1].usage
    assert streamed.model_extra["prompt_cache_hit_tokens"] > 0

    records = {r["request_id"]: r for r in _records(gw)}
    newest = sorted(records.values(), key=lambda r: r["created_at"])[-2:]
    for record, usage in zip(newest, (second.usage, streamed), strict=True):
        assert record["provider"] == "deepseek"
        assert record["input_tokens"] == usage.prompt_tokens  # cache hits counted once, inside the prompt
        assert record["cached_input_tokens"] == record["cache_read_input_tokens"] \
            == usage.model_extra["prompt_cache_hit_tokens"]
        assert record["cache_creation_input_tokens"] == 0
        assert record["usage_raw"]["prompt_cache_hit_tokens"] == usage.model_extra["prompt_cache_hit_tokens"]
        assert record["cost_usd"] < record["cost_without_cache_usd"]


def test_a_declared_upstream_routes_by_its_pattern(gateway_factory, emulators, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CORP_LLM_KEY", "sk-corp-upstream")
    corp = UpstreamConfig(name="corp", base_url=emulators.openai_base_url, api_key="env:CORP_LLM_KEY",
                          models=["gpt-4.1*"], usage_dialect="openai")
    gw = gateway_factory({"acme": {"key": KEY, "response_cache": {"enabled": False}}}, upstreams=[corp],
                         admin_key=ADMIN)
    answer = gw.openai(KEY).chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "Hi"}])
    assert answer.choices[0].message.content
    sent = emulators.requests()[-1]
    assert sent.headers["authorization"] == "Bearer sk-corp-upstream"  # the declared upstream's own key
    gw.openai(KEY).chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    assert emulators.requests()[-1].headers["authorization"] == "Bearer sk-gateway-openai"
    providers = {r["model"]: r["provider"] for r in _records(gw)}
    assert providers["gpt-4.1-mini"] == "corp" and providers["gpt-4o-mini"] == "openai"
