"""The OpenAI Agents SDK through the gateway's Responses endpoint (its default model class), with an OpenAI
model and, through the gateway's Responses → Chat → Anthropic / Gemini translations, a Claude and a Gemini
model. Tracing is off (it would export to OpenAI)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from .client_support import Trip, get_weather
from .conftest import CHECKS, KEY, LONG_SYSTEM, WEATHER_QUESTION, Gateway

agents = pytest.importorskip("agents")
import openai  # noqa: E402
from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled  # noqa: E402

set_tracing_disabled(True)
MODELS = {"gpt-4o-mini": "openai", "claude-sonnet-4-5": "anthropic", "gemini-2.5-flash": "gemini"}
weather_tool = function_tool(get_weather)


def _agent(gw: Gateway, model: str, **kw: Any) -> Agent:
    client = openai.AsyncOpenAI(base_url=gw.openai_url, api_key=KEY, max_retries=0)
    return Agent(name="helper", instructions=kw.pop("instructions", "Be brief."),
                 model=OpenAIResponsesModel(model=model, openai_client=client),
                 model_settings=ModelSettings(max_tokens=2000), **kw)


def _run(agent: Agent, prompt: str) -> Any:
    return asyncio.run(Runner.run(agent, prompt))


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("model", list(MODELS))
def test_openai_agents(gw: Gateway, model: str, check: str) -> None:
    vendor = MODELS[model]
    prompt = f"Explain prompt caching briefly ({model} {check})."
    if check == "plain":
        result = _run(_agent(gw, model), prompt)
        assert isinstance(result.final_output, str) and result.final_output
        assert result.context_wrapper.usage.output_tokens > 0
    elif check == "stream":
        async def go() -> tuple[str, list[str]]:
            run = Runner.run_streamed(_agent(gw, model), prompt)
            deltas = [e.data.delta async for e in run.stream_events()
                      if e.type == "raw_response_event" and e.data.type == "response.output_text.delta"]
            return run.final_output, deltas
        final, deltas = asyncio.run(go())
        assert len(deltas) > 1 and "".join(deltas) == final
    elif check == "tools":
        result = _run(_agent(gw, model, tools=[weather_tool]), WEATHER_QUESTION)
        assert "18C" in result.final_output
    elif check == "structured":
        result = _run(_agent(gw, model, output_type=Trip), "Plan a trip to Lyon.")
        assert isinstance(result.final_output, Trip)
    elif check == "structured_tools":
        result = _run(_agent(gw, model, tools=[weather_tool], output_type=Trip),
                      WEATHER_QUESTION + " Then plan a trip there.")
        assert isinstance(result.final_output, Trip)
        assert any(item.type == "tool_call_output_item" for item in result.new_items)
    elif check == "repeat":
        first = _run(_agent(gw, model), prompt)
        gw.settle()
        before = gw.upstream(vendor)
        again = _run(_agent(gw, model), prompt)
        assert gw.upstream(vendor) == before and gw.statuses()[-1] == "response-hit"
        assert again.final_output == first.final_output
    elif check == "cached_tokens":
        for n, q in enumerate(["Can I return a lamp?", "Can I return a chair?"]):
            result = _run(_agent(gw, model, instructions=LONG_SYSTEM), q)
            gw.settle()
            cached = result.context_wrapper.usage.input_tokens_details.cached_tokens
            assert (cached > 1000) if n else not cached, result.context_wrapper.usage
