"""OpenAI Chat → Bedrock Converse request translation (through the Anthropic mapping), checked against the
Bedrock emulator, which validates Converse bodies."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import orjson
import pytest

from gateway.errors import GatewayError
from gateway.protocols import get_adapter
from gateway.protocols.translate import translate_request
from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)
MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        yield e


def test_conversation_with_tools_round_trips_through_the_emulator(emu: EmulatorSet) -> None:
    body = {"model": MODEL, "temperature": 0.3, "max_completion_tokens": 200, "stop": "END", "user": "u1",
            "tools": TOOLS, "tool_choice": "required",
            "messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Weather in Paris?"},
                         {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                          "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
                         {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
                         {"role": "user", "content": "And in Lyon?"}]}
    path, out = translate_request("openai_chat", "bedrock_converse", body)
    assert path == "/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse"
    assert out["system"] == [{"text": "Be brief."}]
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert out["messages"][2]["content"][0] == {"toolResult": {"toolUseId": "call_1", "content": [{"text": "18C"}]}}
    assert out["toolConfig"]["toolChoice"] == {"any": {}}
    assert out["inferenceConfig"] == {"maxTokens": 200, "temperature": 0.3, "stopSequences": ["END"]}
    r = httpx2.post(emu.platform_url + path, content=orjson.dumps(out),
                    headers={"authorization": "Bearer ABSKdGVzdA=="})
    assert r.status_code == 200, r.text
    answer = get_adapter("bedrock_converse").parse_answer(r.json(), "bedrock")
    assert answer.finish_reason == "tool_calls" and answer.tool_calls[0].name == "get_weather"
    chat = get_adapter("openai_chat").render_answer(answer, body, "r1")
    assert chat["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert chat["usage"]["prompt_tokens"] == r.json()["usage"]["inputTokens"] + r.json()["usage"][
        "cacheReadInputTokens"] + r.json()["usage"]["cacheWriteInputTokens"]


def test_max_tokens_only_when_asked_and_stream_in_the_path() -> None:
    path, out = translate_request("openai_chat", "bedrock_converse",
                                  {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    assert path.endswith("/converse-stream") and "inferenceConfig" not in out


def test_responses_clients_go_through_chat() -> None:
    path, out = translate_request("openai_responses", "bedrock_converse",
                                  {"model": MODEL, "input": "hi", "instructions": "Be brief."})
    assert path.endswith("/converse") and out["system"] == [{"text": "Be brief."}]


@pytest.mark.parametrize("extra, match", [({"n": 2}, "'n' > 1"),
                                          ({"response_format": {"type": "json_object"}}, "response_format"),
                                          ({"logit_bias": {"1": 2}}, "logit_bias")])
def test_refusals(extra: dict[str, object], match: str) -> None:
    with pytest.raises(GatewayError, match=match):
        translate_request("openai_chat", "bedrock_converse",
                          {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **extra})
