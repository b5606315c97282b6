"""gateway.protocols.bedrock_converse / bedrock_stream: Converse answers and ConverseStream frames from the
Bedrock emulator parsed into the neutral answer; answers rendered back as Converse JSON and as frames that
botocore's own ConverseStream parser (what boto3 runs) reads; cross-dialect usage; errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import orjson
import pytest

from gateway.answer import Answer, ToolCall
from gateway.protocols import get_adapter
from gateway.protocols.usage import usage_for
from gateway_dev.emulators import EmulatorSet
from tests.protocols.test_eventstream import _botocore_events

pytestmark = pytest.mark.timeout(60)
MODEL = "anthropic.claude-sonnet-4-20250514-v1%3A0"
A = get_adapter("bedrock_converse")
TOOLS = {"tools": [{"toolSpec": {"name": "get_weather", "description": "Weather in a city",
                                 "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}}],
         "toolChoice": {"any": {}}}


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        yield e


def _call(emu: EmulatorSet, body: dict[str, Any], stream: bool) -> httpx2.Response:
    path = f"/model/{MODEL}/{'converse-stream' if stream else 'converse'}"
    return httpx2.post(emu.platform_url + path, content=orjson.dumps(body),
                       headers={"authorization": "Bearer ABSKdGVzdA=="})


def _ask(text: str, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": [{"text": text}]}], **extra}


def _stream_answer(data: bytes, step: int = 9) -> Answer:
    parser = A.stream_parser("bedrock")
    for i in range(0, len(data), step):
        parser.feed(data[i:i + step])
    parser.end()
    answer = parser.answer()
    assert answer is not None and parser.error is None
    return answer


def test_plain_and_streamed_answers_agree(emu: EmulatorSet) -> None:
    whole = A.parse_answer(_call(emu, _ask("Explain the tides"), False).json(), "bedrock")
    streamed = _stream_answer(_call(emu, _ask("Explain the tides"), True).content)
    assert whole.text and whole.text == streamed.text
    assert whole.finish_reason == streamed.finish_reason == "stop"
    assert whole.usage_raw["outputTokens"] == streamed.usage_raw["outputTokens"] > 0
    assert whole.usage_raw["inputTokens"] == streamed.usage_raw["inputTokens"] > 0


def test_tool_calls_parse_in_both_shapes(emu: EmulatorSet) -> None:
    body = _ask("What is the weather in Paris?", toolConfig=TOOLS)
    whole = A.parse_answer(_call(emu, body, False).json(), "bedrock")
    streamed = _stream_answer(_call(emu, body, True).content, step=5)
    assert whole.finish_reason == streamed.finish_reason == "tool_calls"
    assert [c.name for c in whole.tool_calls] == [c.name for c in streamed.tool_calls] == ["get_weather"]
    assert orjson.loads(whole.tool_calls[0].arguments) == orjson.loads(streamed.tool_calls[0].arguments)
    assert whole.tool_calls[0].id == streamed.tool_calls[0].id and whole.tool_calls[0].id.startswith("tooluse_")


def test_rendered_stream_is_what_boto3_reads() -> None:
    usage = {"inputTokens": 10, "outputTokens": 4, "totalTokens": 2062, "cacheReadInputTokens": 2048,
             "cacheWriteInputTokens": 0}
    answer = Answer(text="Hi there", model="", finish_reason="tool_calls", usage_raw=usage,
                    tool_calls=[ToolCall("tooluse_1", "f", '{"a": 1}')])
    data = b"".join(A.replay(answer, {}, "r1", True, chunk_chars=3))
    events = _botocore_events(data)
    assert list(events[0]) == ["messageStart"]
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events
                   if "contentBlockDelta" in e and "text" in e["contentBlockDelta"]["delta"])
    assert text == "Hi there"
    start = next(e["contentBlockStart"] for e in events if "contentBlockStart" in e)
    assert start == {"start": {"toolUse": {"toolUseId": "tooluse_1", "name": "f"}}, "contentBlockIndex": 1}
    assert {"messageStop": {"stopReason": "tool_use"}} in events
    assert events[-1]["metadata"]["usage"] == usage
    again = _stream_answer(data)
    assert (again.text, again.tool_calls, again.usage_raw) == (answer.text, answer.tool_calls, usage)


def test_render_answer_and_usage_across_dialects() -> None:
    anthropic_usage = {"input_tokens": 5, "cache_read_input_tokens": 2048, "cache_creation_input_tokens": 100,
                       "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 0},
                       "output_tokens": 7}
    out = A.render_answer(Answer(text="ok", model="m", usage_raw=anthropic_usage), {}, "r")
    assert out["output"]["message"] == {"role": "assistant", "content": [{"text": "ok"}]}
    assert out["stopReason"] == "end_turn"
    assert out["usage"] == {"inputTokens": 5, "outputTokens": 7, "totalTokens": 2160, "cacheReadInputTokens": 2048,
                            "cacheWriteInputTokens": 100, "cacheDetails": [{"ttl": "5m", "inputTokens": 100}]}
    # Bedrock usage rendered for an OpenAI client: prompt_tokens includes the reads and writes
    chat = usage_for("openai_chat", out["usage"])
    assert chat["prompt_tokens"] == 2153 and chat["prompt_tokens_details"]["cached_tokens"] == 2048
    assert usage_for("anthropic_messages", out["usage"])["input_tokens"] == 5


def test_conversation_ignores_cache_points() -> None:
    body = {"system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
            "messages": [{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}],
            "toolConfig": {"tools": [TOOLS["tools"][0], {"cachePoint": {"type": "default"}}]}}
    plain = {"system": [{"text": "Be brief."}], "messages": [{"role": "user", "content": [{"text": "hi"}]}],
             "toolConfig": {"tools": TOOLS["tools"]}}
    assert A.conversation(body) == A.conversation(plain)
    assert A.conversation(body).final_user_text == "hi" and A.conversation(body).system == "Be brief."


def test_errors_and_mid_stream_exception(emu: EmulatorSet) -> None:
    r = _call(emu, {"messages": []}, False)
    assert r.status_code == 400
    message, _ = A.parse_error(400, r.content)
    assert "user message" in message
    assert A.error_body(429, "slow") == {"message": "slow"}
    assert A.error_headers(429)["x-amzn-errortype"].startswith("ThrottlingException:")
    emu.platforms.faults.bedrock.inject("stream_error_after=3")
    parser = A.stream_parser("bedrock")
    parser.feed(_call(emu, _ask("Explain the tides"), True).content)
    assert parser.error is not None and parser.error["type"] == "internalServerException"
    assert parser.answer() is None
    frame = A.stream_error("upstream went away", 502)
    with pytest.raises(Exception, match="internalServerException"):
        _botocore_events(frame)
