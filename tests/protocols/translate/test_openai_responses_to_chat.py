"""OpenAI Responses → Chat translation (the bridge from the Responses API to non-OpenAI models)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.errors import GatewayError
from gateway.protocols.translate.openai_responses_to_chat import responses_to_chat, translate_request

TOOL = {"type": "function", "name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": True}


def test_items_become_messages() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "instructions": "Be brief.",
        "input": [
            {"role": "developer", "content": "French please."},
            {"role": "user", "content": [{"type": "input_text", "text": "Look "},
                                         {"type": "input_image", "image_url": "https://x/a.png", "detail": "low"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
            {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"city":"Lyon"}'},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
            {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "21C"}]},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [TOOL], "tool_choice": {"type": "function", "name": "get_weather"},
        "max_output_tokens": 200, "temperature": 0.5, "stream": True, "store": True, "metadata": {"a": "b"},
        "text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}, "strict": True}},
        "reasoning": {"effort": "low", "summary": "auto"},
    }
    chat = responses_to_chat(body)
    assert chat["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "French please."},
        {"role": "user", "content": [{"type": "text", "text": "Look "},
                                     {"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}}]},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Lyon"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "21C"},
        {"role": "user", "content": "Thanks"},
    ]
    assert chat["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather", "parameters": TOOL["parameters"], "strict": True}}]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat["max_completion_tokens"] == 200 and chat["temperature"] == 0.5 and chat["stream"] is True
    assert chat["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "w", "schema": {"type": "object"}, "strict": True}}
    assert chat["reasoning_effort"] == "low"
    assert "store" not in chat and "metadata" not in chat


def test_openai_compatible_upstream_gets_a_metered_chat_stream() -> None:
    path, chat = translate_request({"model": "deepseek-chat", "input": "hi", "stream": True})
    assert path == "/chat/completions"
    assert chat == {"model": "deepseek-chat", "stream": True, "messages": [{"role": "user", "content": "hi"}],
                    "stream_options": {"include_usage": True}}


@pytest.mark.parametrize(("change", "words"), [
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"conversation": "conv_1"}, "conversation"),
    ({"background": True}, "background"),
    ({"tools": [{"type": "web_search"}]}, "web_search"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "item_reference"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]}]}, "file ids"),
    ({"mystery": 1}, "mystery"),
])
def test_refusals(change: dict[str, Any], words: str) -> None:
    with pytest.raises(GatewayError) as info:
        responses_to_chat({"model": "claude-x", "input": "hi", **change})
    assert info.value.status == 400 and words in info.value.message
