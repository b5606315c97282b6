"""pydantic-ai agents through the gateway with its OpenAI (Chat), Anthropic and Google models. Structured
output is pydantic-ai's default: a `final_result` output tool the model is required to call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from .client_support import Trip, get_weather
from .conftest import CHECKS, KEY, LONG_SYSTEM, WEATHER_QUESTION, Gateway

pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.google import GoogleProvider
from pydantic_ai.providers.openai import OpenAIProvider

VENDORS = ["openai", "anthropic", "gemini"]


def _model(gw: Gateway, vendor: str) -> Any:
    if vendor == "openai":
        return OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=gw.openai_url, api_key=KEY))
    if vendor == "anthropic":
        return AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(base_url=gw.url, api_key=KEY))
    return GoogleModel("gemini-2.5-flash", provider=GoogleProvider(base_url=gw.url, api_key=KEY))


def _agent(gw: Gateway, vendor: str, **kw: Any) -> Agent[None, Any]:
    return Agent(_model(gw, vendor), model_settings={"max_tokens": 2000}, **kw)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("vendor", VENDORS)
def test_pydantic_ai(gw: Gateway, vendor: str, check: str) -> None:
    prompt = f"Explain prompt caching briefly ({vendor} {check})."
    if check == "plain":
        result = _agent(gw, vendor).run_sync(prompt)
        assert isinstance(result.output, str) and result.output and result.usage().output_tokens > 0
    elif check == "stream":
        async def go() -> tuple[list[str], str]:
            async with _agent(gw, vendor).run_stream(prompt) as run:
                deltas = [d async for d in run.stream_text(delta=True, debounce_by=None)]
                return deltas, "".join(deltas)
        deltas, text = asyncio.run(go())
        assert len(deltas) > 1 and text
    elif check == "tools":
        result = _agent(gw, vendor, tools=[get_weather]).run_sync(WEATHER_QUESTION)
        assert "18C" in result.output
    elif check == "structured":
        result = _agent(gw, vendor, output_type=Trip).run_sync("Plan a trip to Lyon.")
        assert isinstance(result.output, Trip)
    elif check == "structured_tools":
        result = _agent(gw, vendor, tools=[get_weather], output_type=Trip).run_sync(
            WEATHER_QUESTION + " Then plan a trip there.")
        assert isinstance(result.output, Trip)
        returns = [p for m in result.all_messages() for p in m.parts if p.part_kind == "tool-return"]
        assert any(p.tool_name == "get_weather" and "18C" in str(p.content) for p in returns)
    elif check == "repeat":
        first = _agent(gw, vendor).run_sync(prompt)
        gw.settle()
        before = gw.upstream(vendor)
        again = _agent(gw, vendor).run_sync(prompt)
        assert gw.upstream(vendor) == before and gw.statuses()[-1] == "response-hit"
        assert again.output == first.output
    elif check == "cached_tokens":
        for n, q in enumerate(["Can I return a lamp?", "Can I return a chair?"]):
            result = _agent(gw, vendor, instructions=LONG_SYSTEM).run_sync(q)
            gw.settle()
            read = result.usage().cache_read_tokens
            assert (read > 1000) if n else not read, result.usage()
