"""LiteLLM's SDK (`litellm.completion`) through the gateway on its three routes: `openai/` (api_base = the
gateway's /v1), `anthropic/` (api_base = the gateway) and `gemini/` (api_base = the gateway: LiteLLM then
calls the unversioned `/models/{model}:generateContent`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .client_support import WEATHER_SCHEMA, Trip, tool_result_for, trip_from
from .conftest import CHECKS, KEY, LONG_SYSTEM, WEATHER_QUESTION, Gateway

litellm = pytest.importorskip("litellm")

ROUTES = {
    "openai": ("openai/gpt-4o-mini", "openai", "/v1"),
    "anthropic": ("anthropic/claude-sonnet-4-5", "anthropic", ""),
    "gemini": ("gemini/gemini-2.5-flash", "gemini", ""),
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city.",
                                           "parameters": WEATHER_SCHEMA}}]


def _call(gw: Gateway, route: str, messages: list[dict[str, Any]], **kw: Any) -> Any:
    model, _, suffix = ROUTES[route]
    return litellm.completion(model=model, api_base=gw.url + suffix, api_key=KEY, messages=messages,
                              max_tokens=kw.pop("max_tokens", 2000), num_retries=0, **kw)


def _tool_round(gw: Gateway, route: str, **kw: Any) -> tuple[Any, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": WEATHER_QUESTION}]
    first = _call(gw, route, messages, tools=TOOLS, **kw)
    calls = first.choices[0].message.tool_calls
    assert first.choices[0].finish_reason == "tool_calls" and calls and calls[0].function.name == "get_weather"
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    result = tool_result_for(calls[0].function.arguments)
    messages.append({"role": "tool", "tool_call_id": calls[0].id, "content": result})
    return first, _call(gw, route, messages, tools=TOOLS, **kw)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("route", list(ROUTES))
def test_litellm(gw: Gateway, route: str, check: str) -> None:
    vendor = ROUTES[route][1]
    question = [{"role": "user", "content": f"Explain prompt caching briefly ({route} {check})."}]
    if check == "plain":
        out = _call(gw, route, question)
        assert out.choices[0].message.content and out.choices[0].finish_reason == "stop"
        assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0
    elif check == "stream":
        chunks = list(_call(gw, route, question, stream=True, stream_options={"include_usage": True}))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text and any(getattr(c, "usage", None) and c.usage.completion_tokens for c in chunks)
        assert chunks[-1].choices == [] or any(c.choices and c.choices[0].finish_reason == "stop" for c in chunks)
    elif check == "tools":
        _, second = _tool_round(gw, route)
        assert second.choices[0].finish_reason == "stop" and "18C" in second.choices[0].message.content
    elif check == "structured":
        out = _call(gw, route, [{"role": "user", "content": "Plan a trip to Lyon."}], response_format=Trip)
        assert out.choices[0].finish_reason == "stop"
        trip_from(out.choices[0].message.content)
    elif check == "structured_tools":
        _, second = _tool_round(gw, route, response_format=Trip)
        assert second.choices[0].finish_reason == "stop"
        trip_from(second.choices[0].message.content)
    elif check == "repeat":
        first = _call(gw, route, question)
        gw.settle()
        before = gw.upstream(vendor)
        again = _call(gw, route, question)
        assert gw.upstream(vendor) == before and gw.statuses()[-1] == "response-hit"
        assert again.choices[0].message.content == first.choices[0].message.content
        gw.settle()
        streamed = list(_call(gw, route, question, stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == \
            first.choices[0].message.content
        assert gw.upstream(vendor) == before
    elif check == "cached_tokens":
        for n, q in enumerate(["Can I return a lamp?", "Can I return a chair?"]):
            out = _call(gw, route, [{"role": "system", "content": LONG_SYSTEM}, {"role": "user", "content": q}])
            gw.settle()
            cached = (out.usage.prompt_tokens_details.cached_tokens if out.usage.prompt_tokens_details else 0) or 0
            assert (cached > 1000) if n else (cached == 0), json.dumps(out.usage.model_dump(), default=str)
