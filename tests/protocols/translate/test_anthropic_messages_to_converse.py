"""Anthropic Messages → Bedrock Converse request translation; the translated bodies are accepted by the Bedrock
emulator (which validates Converse as the service model does) and cache where their markers say."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import orjson
import pytest

from gateway.errors import GatewayError
from gateway.protocols.translate.anthropic_messages_to_converse import converse_path, translate_request
from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)
MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
WEATHER = {"name": "get_weather", "description": "Weather of a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
LONG = "Policy clause about refunds and returns, numbered and specific. " * 200


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        yield e


def _post(emu: EmulatorSet, path: str, body: dict[str, Any]) -> httpx2.Response:
    return httpx2.post(emu.platform_url + path, content=orjson.dumps(body),
                       headers={"authorization": "Bearer ABSKdGVzdA=="})


def test_full_conversation_maps_every_block() -> None:
    body = {"model": MODEL, "max_tokens": 300, "temperature": 0.2, "top_p": 0.9, "top_k": 40,
            "stop_sequences": ["END"], "stream": True, "metadata": {"user_id": "u"},
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            "tools": [{**WEATHER, "cache_control": {"type": "ephemeral"}}], "tool_choice": {"type": "tool",
                                                                                           "name": "get_weather"},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                                             {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                          "data": PNG}}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather",
                                                   "input": {"city": "Paris"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "18C",
                                              "is_error": False}]}]}
    path, out = translate_request(body)
    assert path == "/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    assert out["system"] == [{"text": "Be brief."}, {"cachePoint": {"type": "default", "ttl": "1h"}}]
    assert out["toolConfig"] == {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {
        "json": WEATHER["input_schema"]}, "description": "Weather of a city"}}, {"cachePoint": {"type": "default"}}],
        "toolChoice": {"tool": {"name": "get_weather"}}}
    assert out["messages"][0]["content"][1] == {"image": {"format": "png", "source": {"bytes": PNG}}}
    assert out["messages"][1]["content"] == [{"toolUse": {"toolUseId": "t1", "name": "get_weather",
                                                          "input": {"city": "Paris"}}}]
    assert out["messages"][2]["content"] == [{"toolResult": {"toolUseId": "t1", "content": [{"text": "18C"}]}}]
    assert out["inferenceConfig"] == {"maxTokens": 300, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]}
    assert out["additionalModelRequestFields"] == {"top_k": 40}
    assert "model" not in out and "stream" not in out and "metadata" not in out


def test_the_emulator_answers_the_translation_and_its_cache_points_cache(emu: EmulatorSet) -> None:
    body = {"model": MODEL, "max_tokens": 50, "system": [{"type": "text", "text": LONG,
                                                          "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "Summarize the policy."}]}
    path, out = translate_request(body)
    first = _post(emu, path, out)
    assert first.status_code == 200, first.text
    assert first.json()["usage"]["cacheWriteInputTokens"] > 1024
    second = _post(emu, path, out).json()
    assert second["usage"]["cacheReadInputTokens"] == first.json()["usage"]["cacheWriteInputTokens"]


def test_top_level_cache_control_marks_the_last_block() -> None:
    _, out = translate_request({"model": MODEL, "max_tokens": 5, "cache_control": {"type": "ephemeral"},
                                "messages": [{"role": "user", "content": "hi"}]})
    assert out["messages"][-1]["content"] == [{"text": "hi"}, {"cachePoint": {"type": "default"}}]


def test_tool_choice_none_offers_no_tools() -> None:
    _, out = translate_request({"model": MODEL, "max_tokens": 5, "tools": [WEATHER], "tool_choice": {"type": "none"},
                                "messages": [{"role": "user", "content": "hi"}]})
    assert "toolConfig" not in out


@pytest.mark.parametrize("body, match", [
    ({"messages": [{"role": "user", "content": "x"}]}, "'model' is required"),
    ({"model": MODEL, "messages": []}, "non-empty"),
    ({"model": MODEL, "messages": [{"role": "user", "content": [{"type": "image", "source": {
        "type": "url", "url": "https://x/y.png"}}]}]}, "base64"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "container": "c"}, "Unsupported parameter"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "Server tool"),
])
def test_refusals_are_clear_400s(body: dict[str, Any], match: str) -> None:
    with pytest.raises(GatewayError, match=match) as e:
        translate_request(body)
    assert e.value.status == 400


def test_path_encodes_like_boto3() -> None:
    assert converse_path("us.anthropic.claude-3-7-sonnet-20250219-v1:0", False) == \
        "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse"
