"""Mistral, added as one vendor module: routing by its names, its key, its usage dialect, its prices."""

from __future__ import annotations

import httpx2
import pytest

from gateway.accounting.normalize import normalize
from gateway.config import Settings
from gateway.providers import ProviderTable
from gateway.vendors import mistral

ADMIN = "admin-key"
KEY = "key-acme"
DOCUMENT = "The operations handbook describes each maintenance window and who approves it. " * 40


def test_the_usage_dialect_counts_cached_tokens_inside_the_prompt() -> None:
    # the shape of Mistral's documented example: the cached tokens are part of prompt_tokens
    raw = {"prompt_tokens": 1013, "completion_tokens": 12, "total_tokens": 1025, "prompt_audio_seconds": None,
           "prompt_tokens_details": {"cached_tokens": 1008}}
    u = normalize("mistral", raw)
    assert (u.input_tokens, u.cached_input_tokens, u.cache_creation_input_tokens) == (1013, 1008, 0)
    assert (u.output_tokens, u.total_tokens, u.uncached_input_tokens) == (12, 1025, 5)
    miss = mistral.read_usage({"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43})
    assert (miss.input_tokens, miss.cached_input_tokens) == (40, 0)
    assert mistral.read_usage({"prompt_tokens": "x", "prompt_tokens_details": None}).input_tokens == 0


def test_mistral_models_resolve_to_mistral_and_nothing_else_moves() -> None:
    table = ProviderTable(Settings.load(env={"MISTRAL_API_KEY": "sk-m", "GATEWAY_MISTRAL_BASE_URL": "http://m/v1"}))
    for model in ("mistral-small-latest", "magistral-medium-latest", "codestral-latest", "open-mixtral-8x22b"):
        provider = table.for_model(model, "openai_chat")
        assert provider is not None and provider.name == "mistral" and provider.base_url == "http://m/v1"
    assert table.upstream_key(table.builtin["mistral"]) == "sk-m"
    assert table.for_model("gpt-4o", "openai_chat").name == "openai"  # type: ignore[union-attr]
    assert table.for_model("mistral-small-latest", "anthropic_messages").name == "anthropic"  # type: ignore[union-attr]
    assert Settings.load(env={}).base_url("mistral") == "https://api.mistral.ai/v1"


def _records(gw) -> list[dict]:  # type: ignore[no-untyped-def]
    gw.wait_idle()
    r = httpx2.get(f"{gw.url}/admin/usage/records?tenant=acme&limit=50", headers={"authorization": f"Bearer {ADMIN}"})
    r.raise_for_status()
    body = r.json()
    return body["records"] if isinstance(body, dict) else body


@pytest.fixture
def mistral_gateway(gateway_factory, emulators):  # type: ignore[no-untyped-def]
    return gateway_factory({"acme": {"key": KEY, "response_cache": {"enabled": False}}}, admin_key=ADMIN,
                           mistral_base_url=emulators.openai_base_url, mistral_api_key="sk-gateway-mistral")


def test_through_the_gateway_with_the_openai_sdk(mistral_gateway, emulators) -> None:  # type: ignore[no-untyped-def]
    client = mistral_gateway.openai(KEY)
    messages = [{"role": "system", "content": DOCUMENT}, {"role": "user", "content": "Who approves window one?"}]
    first = client.chat.completions.create(model="mistral-small-latest", messages=messages)
    sent = emulators.requests()[-1]
    assert sent.endpoint == "mistral.chat" and sent.headers["authorization"] == "Bearer sk-gateway-mistral"
    assert first.usage.prompt_tokens_details is None or not first.usage.prompt_tokens_details.cached_tokens
    messages[-1]["content"] = "Who approves window two?"
    second = client.chat.completions.create(model="mistral-small-latest", messages=messages)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached > 0 and cached % 64 == 0 and cached < second.usage.prompt_tokens
    messages[-1]["content"] = "Who approves window three?"
    chunks = list(client.chat.completions.create(model="mistral-small-latest", messages=messages, stream=True))
    assert all(c.usage is None for c in chunks)  # the usage chunk the gateway asked for is not relayed
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    records = sorted(_records(mistral_gateway), key=lambda r: r["created_at"])
    assert [r["provider"] for r in records] == ["mistral"] * 3
    assert all(r["usage_dialect"] == "mistral" for r in records)
    hit = records[1]
    assert hit["input_tokens"] == second.usage.prompt_tokens and hit["cached_input_tokens"] == cached
    assert hit["cache_creation_input_tokens"] == 0
    assert hit["price_source"].startswith("litellm:mistral/")
    assert 0 < hit["cost_usd"] < hit["cost_without_cache_usd"]
    assert records[2]["cached_input_tokens"] > 0  # the stream's usage was metered too


def test_the_emulator_caches_whole_64_token_blocks_only(mistral_gateway, emulators) -> None:  # type: ignore[no-untyped-def]
    client = mistral_gateway.openai(KEY)
    short = [{"role": "user", "content": "Hi"}]
    for _ in range(2):
        answer = client.chat.completions.create(model="mistral-small-latest", messages=short)
        assert answer.usage.prompt_tokens < 64 and answer.usage.prompt_tokens_details is None
    with pytest.raises(Exception) as refused:
        client.chat.completions.create(model="mistral-nonexistent", messages=short)
    assert getattr(refused.value, "status_code", None) == 400
