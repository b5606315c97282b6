"""OpenAI Chat → Anthropic Messages request translation."""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from gateway.errors import GatewayError
from gateway.protocols.translate.openai_chat_to_anthropic import translate_request

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
CONVERSATION: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "Answer in French."}]},
        {"role": "user", "content": [{"type": "text", "text": "Weather here?"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                                     {"type": "image_url", "image_url": {"url": "https://example.com/sky.jpg",
                                                                         "detail": "low"}}]},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Lyon"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "21C"}]},
        {"role": "user", "content": "Thanks!"},
    ],
    "tools": TOOLS,
    "tool_choice": "auto",
    "max_completion_tokens": 300,
    "temperature": 0.3,
    "top_p": 0.9,
    "stop": "END",
    "stream": True,
    "stream_options": {"include_usage": True},
    "user": "u-1", "store": False, "metadata": {"k": "v"}, "prompt_cache_key": "pk", "seed": 7,
}


def test_full_conversation() -> None:
    original = copy.deepcopy(CONVERSATION)
    path, body = translate_request(CONVERSATION)
    assert original == CONVERSATION  # the client's body is never mutated
    assert path == "/v1/messages"
    assert body == {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Answer in French."}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Weather here?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/sky.jpg"}}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Lyon"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "18C"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "21C"}]},
                {"type": "text", "text": "Thanks!"}]},
        ],
        "max_tokens": 300,
        "temperature": 0.3,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "tools": [{"name": "get_weather", "description": "Weather of a city",
                   "input_schema": TOOLS[0]["function"]["parameters"]}],
        "tool_choice": {"type": "auto"},
        "stream": True,
    }


@pytest.mark.parametrize(("choice", "parallel", "expected"), [
    ("auto", None, {"type": "auto"}),
    ("required", None, {"type": "any"}),
    ("none", None, {"type": "none"}),
    ({"type": "function", "function": {"name": "get_weather"}}, None, {"type": "tool", "name": "get_weather"}),
    ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
    (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
])
def test_tool_choice(choice: Any, parallel: bool | None, expected: dict[str, Any]) -> None:
    body: dict[str, Any] = {"model": "claude-x", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    if choice is not None:
        body["tool_choice"] = choice
    if parallel is not None:
        body["parallel_tool_calls"] = parallel
    assert translate_request(body)[1]["tool_choice"] == expected


def test_max_tokens_default_is_the_models_output_limit() -> None:
    base = {"messages": [{"role": "user", "content": "hi"}]}
    assert translate_request({**base, "model": "claude-sonnet-4-5"})[1]["max_tokens"] == 64000
    assert translate_request({**base, "model": "claude-unknown-9"})[1]["max_tokens"] == 4096
    assert translate_request({**base, "model": "claude-x", "max_tokens": 12})[1]["max_tokens"] == 12


def test_structured_output_and_thinking() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
              "additionalProperties": False}
    body = {"model": "claude-x", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5000,
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
            "reasoning_effort": "medium"}
    out = translate_request(body)[1]
    assert out["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_pdf_file_part_becomes_a_document() -> None:
    body = {"model": "claude-x", "messages": [{"role": "user", "content": [
        {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0x"}}]}]}
    block = translate_request(body)[1]["messages"][0]["content"][0]
    assert block == {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                    "data": "JVBERi0x"}}


@pytest.mark.parametrize(("change", "words"), [
    ({"n": 2}, "'n'"),
    ({"logprobs": True}, "logprobs"),
    ({"top_logprobs": 3}, "top_logprobs"),
    ({"frequency_penalty": 0.5}, "frequency_penalty"),
    ({"audio": {"voice": "alloy"}}, "audio"),
    ({"modalities": ["text", "audio"]}, "text output"),
    ({"temperature": 1.5}, "between 0 and 1"),
    ({"response_format": {"type": "json_object"}}, "json_schema"),
    ({"some_new_param": 1}, "some_new_param"),
    ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "Only 'function' tools"),
    ({"messages": []}, "non-empty"),
    ({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]}, "input_audio"),
    ({"messages": [{"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}]}, "not valid JSON"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "tool_call_id"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}]}, "http"),
    ({"model": ""}, "'model'"),
])
def test_refusals_are_clear_400s(change: dict[str, Any], words: str) -> None:
    body = {"model": "claude-x", "messages": [{"role": "user", "content": "hi"}], **change}
    with pytest.raises(GatewayError) as info:
        translate_request(body)
    assert info.value.status == 400 and words in info.value.message


def test_harmless_defaults_are_accepted() -> None:
    body = {"model": "claude-x", "messages": [{"role": "user", "content": "hi"}], "n": 1, "logprobs": False,
            "frequency_penalty": 0, "presence_penalty": 0.0, "logit_bias": {}, "modalities": ["text"],
            "verbosity": "medium", "service_tier": "auto", "safety_identifier": "s", "prediction": None}
    out = translate_request(body)[1]
    assert set(out) == {"model", "messages", "max_tokens"}


def test_agrees_with_litellm_on_messages_and_tools() -> None:
    """litellm's own translation (the reference implementation) gives the same messages, system,
    tools and tool_choice for a standard request (litellm adds its `type: custom` tool tag)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    request = copy.deepcopy(CONVERSATION)
    request["messages"][2]["content"] = [request["messages"][2]["content"][0],
                                         {"type": "image_url", "image_url": {"url": "https://example.com/sky.jpg"}}]
    ours = translate_request(request)[1]
    request["messages"][1]["role"] = "system"  # litellm.completion maps developer → system before this step
    cfg = AnthropicConfig()
    params = cfg.map_openai_params({"tools": TOOLS, "tool_choice": "auto", "max_tokens": 300, "temperature": 0.3,
                                    "stop": ["END"]}, {}, "claude-sonnet-4-5", drop_params=False)
    theirs = cfg.transform_request("claude-sonnet-4-5", copy.deepcopy(request["messages"]), params, {}, {})
    assert ours["messages"] == theirs["messages"]
    assert ours["system"] == theirs["system"]
    assert ours["tool_choice"] == theirs["tool_choice"] and ours["stop_sequences"] == theirs["stop_sequences"]
    assert [{k: v for k, v in t.items() if k != "type"} for t in theirs["tools"]] == ours["tools"]
