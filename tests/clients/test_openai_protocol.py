"""Claude and Gemini through the gateway's OpenAI Chat endpoint, as LiteLLM-style users call them: the
official SDK's `chat.completions.parse` gets schema-valid JSON (the translator sends Anthropic
`output_config.format`, Gemini `responseJsonSchema`), and `reasoning_effort` brings the reasoning back:
`completion_tokens_details.reasoning_tokens` and the text as `reasoning_content`, streamed too."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from .client_support import Trip
from .conftest import KEY, Gateway

MODELS = ["claude-sonnet-4-5", "gemini-2.5-flash"]


def _client(gw: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.openai_url, api_key=KEY, max_retries=0)


@pytest.mark.parametrize("model", MODELS)
def test_parse_with_other_vendors(gw: Gateway, model: str) -> None:
    out = _client(gw).chat.completions.parse(model=model, response_format=Trip, max_completion_tokens=2000,
                                             messages=[{"role": "user", "content": "Plan a trip to Lyon."}])
    assert out.choices[0].finish_reason == "stop"
    assert isinstance(out.choices[0].message.parsed, Trip)


@pytest.mark.parametrize("model", MODELS)
def test_reasoning_effort_brings_reasoning_back(gw: Gateway, model: str) -> None:
    kw: dict[str, Any] = {"model": model, "reasoning_effort": "low", "max_completion_tokens": 4000,
                          "messages": [{"role": "user", "content": "Why is the sky blue?"}]}
    out = _client(gw).chat.completions.create(**kw)
    details = out.usage.completion_tokens_details
    assert details is not None and 0 < details.reasoning_tokens < out.usage.completion_tokens
    reasoning = (out.choices[0].message.model_extra or {}).get("reasoning_content")
    assert reasoning and out.choices[0].message.content
    chunks = list(_client(gw).chat.completions.create(**kw, stream=True, stream_options={"include_usage": True}))
    streamed = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
                       for c in chunks if c.choices)
    assert streamed == reasoning
    assert chunks[-1].usage.completion_tokens_details.reasoning_tokens == details.reasoning_tokens


@pytest.mark.parametrize("model", MODELS)
def test_litellm_reads_reasoning_content(gw: Gateway, model: str) -> None:
    litellm = pytest.importorskip("litellm")
    out = litellm.completion(model=f"openai/{model}", api_base=gw.openai_url, api_key=KEY, reasoning_effort="low",
                             max_tokens=4000, num_retries=0,
                             messages=[{"role": "user", "content": "Why is the sky blue?"}])
    assert out.choices[0].message.reasoning_content
    assert out.usage.completion_tokens_details.reasoning_tokens > 0
    chunks = list(litellm.completion(model=f"openai/{model}", api_base=gw.openai_url, api_key=KEY,
                                     reasoning_effort="low", max_tokens=4000, num_retries=0, stream=True,
                                     messages=[{"role": "user", "content": "Why is the sky blue, briefly?"}]))
    assert "".join(getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices)
