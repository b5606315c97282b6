"""Gemini adapter: model/stream from the path, conversation, parse_answer, render_answer read by the SDK."""

from __future__ import annotations

import json

import orjson
import pytest
from google.genai import errors as genai_errors
from google.genai import types

from gateway.protocols.gemini import adapter

from ._sdk import Served, genai_client
from ._support import answers

LIVE = {
    "candidates": [{"content": {"role": "model", "parts": [
        {"text": "thinking...", "thought": True},
        {"text": "Checking."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}]},
        "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 2100, "cachedContentTokenCount": 2048, "candidatesTokenCount": 10,
                      "thoughtsTokenCount": 5, "totalTokenCount": 2115},
    "modelVersion": "gemini-2.5-flash", "responseId": "abc",
}


def test_model_and_stream_come_from_the_path() -> None:
    assert adapter.model_of({}, "gemini-2.5-flash") == "gemini-2.5-flash"
    assert adapter.model_of({}, "models/gemini-2.5-pro") == "gemini-2.5-pro"
    assert adapter.is_stream({"stream": False}, True) and not adapter.is_stream({"stream": True}, False)


def test_conversation() -> None:
    body = {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}, {"inlineData": {"mimeType": "image/png", "data": "AAA"}}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"t": 20}}}]},
            {"role": "user", "parts": [{"text": "Thanks"}]},
        ],
        "tools": [{"functionDeclarations": [{"name": "f"}]}],
    }
    conv = adapter.conversation(body)
    assert conv.system == "Be brief."
    assert [t.role for t in conv.turns] == ["user", "assistant", "tool", "user"]
    assert conv.has_tool_traffic and conv.final_user_text == "Thanks" and conv.tools == body["tools"]
    snake = {"system_instruction": body["systemInstruction"], "contents": body["contents"], "tools": body["tools"]}
    assert adapter.conversation(snake) == conv
    cached = adapter.conversation({**body, "cachedContent": "cachedContents/abc"})
    assert cached != conv and "cachedContents/abc" in cached.system


def test_parse_answer_skips_thoughts_and_keeps_signatures() -> None:
    answer = adapter.parse_answer(LIVE, "gemini")
    assert answer.text == "Checking." and answer.finish_reason == "tool_calls"
    assert answer.tool_calls[0].name == "get_weather" and answer.tool_calls[0].arguments == '{"city":"Paris"}'
    assert answer.tool_calls[0].id.endswith("__thought__c2ln")
    assert answer.usage_raw is LIVE["usageMetadata"] and answer.model == "gemini-2.5-flash"
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}}
    assert adapter.parse_answer(blocked, "gemini").finish_reason == "content_filter"
    cut = {**LIVE, "candidates": [{**LIVE["candidates"][0], "finishReason": "MAX_TOKENS"}]}
    assert adapter.parse_answer(cut, "gemini").finish_reason == "length"


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool", "length"])
def test_sdk_reads_rendered_answer(name: str) -> None:
    answer = answers("gemini", "gemini-2.5-flash")[name]
    rendered = adapter.render_answer(answer, {}, "resp2")
    response = genai_client(Served(orjson.dumps(rendered))).models.generate_content(
        model="gemini-2.5-flash", contents="hi")
    types.GenerateContentResponse.model_validate(rendered)  # extra fields forbidden: all declared
    assert (response.text or "") == answer.text
    assert [(fc.name, fc.args) for fc in response.function_calls or []] == [
        (c.name, json.loads(c.arguments)) for c in answer.tool_calls]
    assert response.usage_metadata.cached_content_token_count == 1920
    assert response.candidates[0].finish_reason.value == ("MAX_TOKENS" if name == "length" else "STOP")
    assert response.response_id == "resp2"


def test_live_answer_round_trip_keeps_signature() -> None:
    rendered = adapter.render_answer(adapter.parse_answer(LIVE, "gemini"), {}, "abc")
    parts = rendered["candidates"][0]["content"]["parts"]
    assert parts == [{"text": "Checking."},
                     {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}]
    assert rendered["usageMetadata"] == LIVE["usageMetadata"]


@pytest.mark.parametrize("status", [400, 403, 429, 503])
def test_error_body_is_raised_by_sdk(status: int) -> None:
    body = adapter.error_body(status, "nope")
    with pytest.raises(genai_errors.APIError, match="nope") as info:
        genai_client(Served(orjson.dumps(body), status=status)).models.generate_content(
            model="gemini-2.5-flash", contents="hi")
    assert info.value.code == status
