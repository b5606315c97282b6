"""OpenAI Chat adapter: conversation, parse_answer, render_answer read by the official SDK, errors,
and the include_usage rewrite for metered streams."""

from __future__ import annotations

import copy

import openai
import orjson
import pytest

from gateway.protocols.openai_chat import adapter

from ._sdk import Served, assert_declared, openai_client
from ._support import TEXT, answers

REQ = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
LIVE = {
    "id": "chatcmpl-123", "object": "chat.completion", "created": 1741570283, "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_eb9dce56a8", "service_tier": "default",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None, "message": {
        "role": "assistant", "content": "Checking.", "refusal": None,
        "tool_calls": [{"id": "call_a", "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}}],
    "usage": {"prompt_tokens": 2006, "completion_tokens": 20, "total_tokens": 2026,
              "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0}},
}


def test_conversation_is_deterministic_and_complete() -> None:
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "Use French."}]},
            {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                         {"type": "image_url", "image_url": {"url": "https://x/a.png"}}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "42"},
            {"role": "user", "content": "And?"},
        ],
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    conv = adapter.conversation(body)
    assert conv.system == "Be brief.\nUse French."
    assert [t.role for t in conv.turns] == ["user", "assistant", "tool", "user"]
    assert conv.turns[0].text == 'What is this?\n{"image_url":{"url":"https://x/a.png"},"type":"image_url"}'
    assert conv.has_tool_traffic and conv.final_user_text == "And?"
    assert conv.tools == body["tools"]
    # equal requests give equal conversations, whatever the key order of the parts
    reordered = copy.deepcopy(body)
    reordered["messages"][2]["content"][1] = {"image_url": {"url": "https://x/a.png"}, "type": "image_url"}
    assert adapter.conversation(reordered) == conv
    # different tool_call ids are different conversations (a known cache-collision bug class)
    other = copy.deepcopy(body)
    other["messages"][4]["tool_call_id"] = "call_2"
    assert adapter.conversation(other) != conv


def test_parse_answer_keeps_usage_raw_and_extras() -> None:
    answer = adapter.parse_answer(LIVE, "openai")
    assert answer.text == "Checking." and answer.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("call_a", "get_weather", '{"city":"Paris"}')]
    assert answer.usage_raw is LIVE["usage"]
    assert answer.extra == {"openai_chat": {"system_fingerprint": "fp_eb9dce56a8", "service_tier": "default"}}
    assert answer.model == "gpt-4o-2024-08-06" and answer.provider == "openai"


def test_parse_answer_reads_content_parts() -> None:
    body = {"model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]}
    assert adapter.parse_answer(body, "vllm").text == "ab"


def test_parse_answer_maps_legacy_function_call() -> None:
    body = {"model": "m", "choices": [{"index": 0, "finish_reason": "function_call", "message": {
        "role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}}]}
    answer = adapter.parse_answer(body, "openai")
    assert answer.finish_reason == "tool_calls" and answer.tool_calls[0].name == "f" and answer.text == ""


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool", "length"])
def test_sdk_reads_rendered_answer(name: str) -> None:
    answer = answers("openai_chat", "gpt-4o-2024-08-06")[name]
    rendered = adapter.render_answer(answer, REQ, "req42")
    client = openai_client(Served(orjson.dumps(rendered)))
    completion = client.chat.completions.create(model="gpt-4o", messages=REQ["messages"])
    assert_declared(completion)
    assert completion.id == "chatcmpl-req42" and completion.object == "chat.completion"
    assert completion.model == "gpt-4o-2024-08-06" and completion.created > 1_700_000_000
    choice = completion.choices[0]
    assert choice.finish_reason == answer.finish_reason
    assert (choice.message.content or "") == answer.text
    if not answer.text:
        assert choice.message.content is None  # like OpenAI for a pure tool-call answer
    calls = [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    assert calls == [(c.id, c.name, c.arguments) for c in answer.tool_calls]
    assert completion.usage.prompt_tokens == 2006
    assert completion.usage.prompt_tokens_details.cached_tokens == 1920


def test_render_replays_vendor_extras() -> None:
    answer = adapter.parse_answer(LIVE, "openai")
    rendered = adapter.render_answer(answer, REQ, "r")
    completion = openai_client(Served(orjson.dumps(rendered))).chat.completions.create(model="gpt-4o", messages=[])
    assert completion.system_fingerprint == "fp_eb9dce56a8" and completion.service_tier == "default"
    assert rendered["usage"] == LIVE["usage"]  # same dialect: the vendor's object untouched


def test_text_answer_round_trip() -> None:
    rendered = adapter.render_answer(answers("openai_chat")["text"], REQ, "r")
    assert adapter.parse_answer(rendered, "openai").text == TEXT


@pytest.mark.parametrize(("status", "exc"), [(400, openai.BadRequestError), (401, openai.AuthenticationError),
                                             (429, openai.RateLimitError), (502, openai.InternalServerError)])
def test_error_body_is_raised_by_sdk(status: int, exc: type[Exception]) -> None:
    body = adapter.error_body(status, "nope", "some_code")
    client = openai_client(Served(orjson.dumps(body), status=status))
    with pytest.raises(exc) as info:
        client.chat.completions.create(model="gpt-4o", messages=[])
    assert "nope" in str(info.value)
    assert info.value.code == "some_code"


def test_parse_error_reads_each_vendor_shape() -> None:
    assert adapter.parse_error(400, b'{"error":{"message":"bad","type":"invalid_request_error","code":"x"}}') == (
        "bad", "x")
    assert adapter.parse_error(529, b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}') == (
        "Overloaded", "overloaded_error")
    assert adapter.parse_error(503, b'{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}') == (
        "busy", "UNAVAILABLE")
    assert adapter.parse_error(502, b"<html>Bad gateway</html>") == ("<html>Bad gateway</html>", None)


def test_upstream_stream_body_asks_for_usage_without_touching_the_original() -> None:
    body = {"model": "gpt-4o", "messages": [], "stream": True, "stream_options": {"include_obfuscation": False},
            "some_future_field": 1}
    sent, sse_filter = adapter.upstream_stream_body(body)
    assert sent["stream_options"] == {"include_obfuscation": False, "include_usage": True}
    assert body["stream_options"] == {"include_obfuscation": False}
    assert sent["some_future_field"] == 1 and sse_filter is not None
    asked = {**body, "stream_options": {"include_usage": True}}
    assert adapter.upstream_stream_body(asked) == (asked, None)


def test_model_and_stream_flags() -> None:
    assert adapter.model_of({"model": "gpt-4o"}, None) == "gpt-4o"
    assert adapter.model_of({}, None) == ""
    assert adapter.is_stream({"stream": True}, False) and not adapter.is_stream({"stream": "yes"}, False)
