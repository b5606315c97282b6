"""OpenAI Chat → Gemini generateContent request translation. The output is also validated against
google-genai's own request types (pydantic, extra fields forbidden)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from google.genai import types

from gateway.errors import GatewayError
from gateway.protocols.translate.openai_chat_to_gemini import DUMMY_SIGNATURE, translate_request

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
PARAMS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
          "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": PARAMS}}]
CONVERSATION: dict[str, Any] = {
    "model": "gemini-2.5-flash",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather here?"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                                     {"type": "image_url", "image_url": "https://example.com/sky.jpg"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1__thought__c2ln", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1__thought__c2ln", "content": '{"temp": 18}'},
        {"role": "user", "content": "Thanks!"},
    ],
    "tools": TOOLS,
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "max_tokens": 300, "temperature": 0.3, "top_p": 0.9, "stop": ["END"], "seed": 7,
    "presence_penalty": 0.1, "user": "u-1", "store": False,
}


def validate(body: dict[str, Any]) -> None:
    """google-genai's request types accept the body (camelCase aliases, extra fields forbidden)."""
    for content in body["contents"]:
        types.Content.model_validate(content)
    if "systemInstruction" in body:
        types.Content.model_validate(body["systemInstruction"])
    for tool in body.get("tools", []):
        types.Tool.model_validate(tool)
    if "toolConfig" in body:
        types.ToolConfig.model_validate(body["toolConfig"])
    if "generationConfig" in body:
        types.GenerationConfig.model_validate(body["generationConfig"])


def test_full_conversation() -> None:
    original = copy.deepcopy(CONVERSATION)
    path, body = translate_request(CONVERSATION)
    assert original == CONVERSATION
    assert path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather here?"},
                                       {"inlineData": {"mimeType": "image/png", "data": PNG}},
                                       {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/sky.jpg"}}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                                         "thoughtSignature": "c2ln"}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp": 18}}},
                                       {"text": "Thanks!"}]},
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather",
                                             "parametersJsonSchema": PARAMS}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        "generationConfig": {"maxOutputTokens": 300, "temperature": 0.3, "topP": 0.9, "seed": 7,
                             "presencePenalty": 0.1, "stopSequences": ["END"]},
    }
    validate(body)


def test_stream_path_and_json_output() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    body = {"model": "models/gemini-2.5-pro", "stream": True, "messages": [{"role": "user", "content": "hi"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
            "reasoning_effort": "low"}
    path, out = translate_request(body)
    assert path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert out["generationConfig"] == {"responseMimeType": "application/json", "responseJsonSchema": schema,
                                       "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True}}
    validate(out)
    obj = translate_request({**body, "response_format": {"type": "json_object"}, "reasoning_effort": None})[1]
    assert obj["generationConfig"] == {"responseMimeType": "application/json"}


@pytest.mark.parametrize(("choice", "mode"), [("auto", "AUTO"), ("none", "NONE"), ("required", "ANY")])
def test_tool_choice(choice: str, mode: str) -> None:
    body = {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS,
            "tool_choice": choice}
    assert translate_request(body)[1]["toolConfig"] == {"functionCallingConfig": {"mode": mode}}


def test_gemini_3_gets_a_signature_for_calls_from_other_models() -> None:
    body = copy.deepcopy(CONVERSATION)
    body["model"] = "gemini-3-pro-preview"
    call = body["messages"][2]["tool_calls"][0]
    call["id"] = "toolu_from_claude"
    body["messages"][3]["tool_call_id"] = "toolu_from_claude"
    model_turn = translate_request(body)[1]["contents"][1]
    assert model_turn["parts"][0]["thoughtSignature"] == DUMMY_SIGNATURE
    validate(translate_request(body)[1])


def test_audio_and_pdf_parts() -> None:
    body = {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0x"}}]}]}
    parts = translate_request(body)[1]["contents"][0]["parts"]
    assert parts == [{"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}},
                     {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}}]


@pytest.mark.parametrize(("change", "words"), [
    ({"n": 3}, "'n'"),
    ({"logprobs": True}, "logprobs"),
    ({"logit_bias": {"1": 2}}, "logit_bias"),
    ({"unknown_field": True}, "unknown_field"),
    ({"reasoning_effort": "ultra"}, "reasoning_effort"),
    ({"tool_choice": {"type": "allowed_tools"}}, "tool_choice"),
    ({"messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]}, "unknown tool_call_id"),
    ({"messages": [{"role": "critic", "content": "x"}]}, "role 'critic'"),
])
def test_refusals_are_clear_400s(change: dict[str, Any], words: str) -> None:
    body = {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hi"}], **change}
    with pytest.raises(GatewayError) as info:
        translate_request(body)
    assert info.value.status == 400 and words in info.value.message
