"""The translation entry point the request path calls (gateway.protocols.translate)."""

from __future__ import annotations

import pytest

from gateway.errors import GatewayError
from gateway.protocols.translate import translate_request
from gateway.vendors import registry


@pytest.mark.parametrize(("client", "name", "expected"), [
    ("openai_chat", "anthropic", "anthropic_messages"),
    ("openai_chat", "gemini", "gemini"),
    ("openai_chat", "deepseek", "openai_chat"),
    ("openai_responses", "openai", "openai_responses"),
    ("openai_responses", "deepseek", "openai_chat"),
    ("openai_responses", "vllm", "openai_chat"),
    ("openai_responses", "anthropic", "anthropic_messages"),
    ("anthropic_messages", "anthropic", "anthropic_messages"),
])
def test_upstream_protocol(client: str, name: str, expected: str) -> None:
    spec = registry.get(name)
    assert spec is not None and spec.upstream_protocol(client) == expected


def test_vendor_names_and_overrides() -> None:
    body = {"model": "alias", "messages": [{"role": "user", "content": "hi"}]}
    path, out = translate_request("openai_chat", "gemini", body, model="gemini-2.5-flash", stream=True)
    assert path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    path, out = translate_request("openai_chat", "anthropic", body, model="claude-x", stream=True)
    assert path == "/v1/messages" and out["model"] == "claude-x" and out["stream"] is True
    assert body == {"model": "alias", "messages": [{"role": "user", "content": "hi"}]}


def test_responses_reach_anthropic_and_gemini_through_chat() -> None:
    body = {"model": "claude-x", "instructions": "Be brief.", "input": "hi", "max_output_tokens": 50}
    path, out = translate_request("openai_responses", "anthropic_messages", body)
    assert path == "/v1/messages"
    assert out == {"model": "claude-x", "system": [{"type": "text", "text": "Be brief."}],
                   "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "max_tokens": 50}
    path, out = translate_request("openai_responses", "gemini", {**body, "model": "gemini-2.5-flash"})
    assert path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert out["generationConfig"] == {"maxOutputTokens": 50}


def test_unsupported_pairs_are_refused() -> None:
    with pytest.raises(GatewayError) as info:
        translate_request("anthropic_messages", "gemini", {"model": "x"})
    assert info.value.status == 400
    with pytest.raises(GatewayError):
        translate_request("openai_chat", "anthropic", ["not", "a", "dict"])  # type: ignore[arg-type]
