"""LangChain's chat models through the gateway: ChatOpenAI (Chat Completions and the Responses API),
ChatAnthropic, ChatGoogleGenerativeAI; structured output the LangChain way (`with_structured_output`, and
`create_agent(..., tools, response_format=...)` for structured output with tools)."""

from __future__ import annotations

from typing import Any

import pytest

from .client_support import Trip, get_weather
from .conftest import CHECKS, KEY, LONG_SYSTEM, WEATHER_QUESTION, Gateway

pytest.importorskip("langchain_openai")
pytest.importorskip("langchain_anthropic")
pytest.importorskip("langchain_google_genai")

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_openai import ChatOpenAI

VENDOR = {"openai": "openai", "openai_responses": "openai", "anthropic": "anthropic", "gemini": "gemini"}


def _model(gw: Gateway, kind: str) -> Any:
    if kind == "openai":
        # stream_usage: ChatOpenAI asks for stream usage by default only when base_url is OpenAI's own.
        return ChatOpenAI(model="gpt-4o-mini", base_url=gw.openai_url, api_key=KEY, max_retries=0,
                          stream_usage=True)
    if kind == "openai_responses":
        return ChatOpenAI(model="gpt-4o-mini", base_url=gw.openai_url, api_key=KEY, max_retries=0,
                          use_responses_api=True)
    if kind == "anthropic":
        return ChatAnthropic(model="claude-sonnet-4-5", base_url=gw.url, api_key=KEY, max_retries=0,
                             max_tokens=2000)
    return ChatGoogleGenerativeAI(model="gemini-2.5-flash", api_key=KEY, base_url=gw.url, retries=0)


weather_tool = tool(get_weather)


def _text(message: Any) -> str:
    return message.text if isinstance(message.text, str) else message.text()


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("kind", list(VENDOR))
def test_langchain(gw: Gateway, kind: str, check: str) -> None:
    llm = _model(gw, kind)
    vendor = VENDOR[kind]
    question = [HumanMessage(f"Explain prompt caching briefly ({kind} {check}).")]
    if check == "plain":
        out = llm.invoke(question)
        assert _text(out) and out.usage_metadata["output_tokens"] > 0
    elif check == "stream":
        chunks = list(llm.stream(question))
        full = chunks[0]
        for c in chunks[1:]:
            full = full + c
        assert _text(full) and full.usage_metadata and full.usage_metadata["output_tokens"] > 0
    elif check == "tools":
        bound = llm.bind_tools([weather_tool])
        messages: list[Any] = [HumanMessage(WEATHER_QUESTION)]
        first = bound.invoke(messages)
        assert first.tool_calls and first.tool_calls[0]["name"] == "get_weather"
        call = first.tool_calls[0]
        messages += [first, ToolMessage(weather_tool.invoke(call["args"]), tool_call_id=call["id"])]
        second = bound.invoke(messages)
        assert not second.tool_calls and "18C" in _text(second)
    elif check == "structured":
        trip = llm.with_structured_output(Trip).invoke([HumanMessage("Plan a trip to Lyon.")])
        assert isinstance(trip, Trip)
    elif check == "structured_tools":
        agent = create_agent(llm, tools=[weather_tool], response_format=Trip)
        result = agent.invoke({"messages": [HumanMessage(WEATHER_QUESTION + " Then plan a trip there.")]})
        assert isinstance(result["structured_response"], Trip)
        assert any(isinstance(m, ToolMessage) and "18C" in str(m.content) for m in result["messages"])
    elif check == "repeat":
        first = llm.invoke(question)
        gw.settle()
        before = gw.upstream(vendor)
        again = llm.invoke(question)
        assert gw.upstream(vendor) == before and gw.statuses()[-1] == "response-hit"
        assert _text(again) == _text(first)
    elif check == "cached_tokens":
        for n, q in enumerate(["Can I return a lamp?", "Can I return a chair?"]):
            out = llm.invoke([SystemMessage(LONG_SYSTEM), HumanMessage(q)])
            gw.settle()
            read = (out.usage_metadata.get("input_token_details") or {}).get("cache_read", 0)
            assert (read > 1000) if n else not read, out.usage_metadata
