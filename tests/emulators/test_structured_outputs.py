"""Structured outputs, forced tool calls, model lists and reasoning in the emulators, driven by the official
SDKs: what a client library sends (Anthropic `output_config.format` / the beta `output_format`, OpenAI
`response_format` / Responses `text.format`, Gemini `responseJsonSchema` / `responseSchema`) is answered with
JSON that validates against the schema, after a tool result too; `tool_choice` required/any always calls a
tool; an unknown model is a 404; reasoning comes back where the vendor returns it."""

from __future__ import annotations

import json
import warnings
from typing import Literal

import anthropic
import jsonschema
import openai
import pydantic
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from gateway_dev.emulators import EmulatorSet

pytestmark = [pytest.mark.timeout(60), pytest.mark.filterwarnings("ignore::DeprecationWarning")]
warnings.filterwarnings("ignore", category=DeprecationWarning)


class Address(pydantic.BaseModel):
    city: str
    postcode: str | None = None


class Person(pydantic.BaseModel):
    name: str
    age: int
    role: Literal["admin", "user"]
    home: Address
    previous: list[Address]
    grid: list[list[int]]
    manager: Person | None = None


SCHEMA = Person.model_json_schema()  # $defs + $ref, anyOf with null, enum, nested arrays, recursion
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture(scope="module")
def oa(emu: EmulatorSet) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-1", max_retries=0)


@pytest.fixture(scope="module")
def an(emu: EmulatorSet) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="sk-ant-1", max_retries=0)


@pytest.fixture(scope="module")
def gm(emu: EmulatorSet) -> genai.Client:
    return genai.Client(api_key="g-1", http_options=types.HttpOptions(base_url=emu.gemini_base_url,
                                                                      api_version="v1beta"))


def _valid(text: str, schema: dict = SCHEMA) -> dict:
    value = json.loads(text)
    jsonschema.validate(value, schema)
    return value


# -- Anthropic ----------------------------------------------------------------------------------------------
def test_anthropic_output_config_format_through_messages_parse(an) -> None:
    msg = an.messages.parse(model="claude-sonnet-4-5", max_tokens=800, output_format=Person,
                            messages=[{"role": "user", "content": "Describe a person living in Lyon"}])
    assert msg.stop_reason == "end_turn"
    assert isinstance(msg.parsed_output, Person)
    _valid(msg.content[0].text)


def test_anthropic_beta_output_format_with_the_beta_header(emu, an) -> None:
    raw = an.messages.create(
        model="claude-sonnet-4-5", max_tokens=800, messages=[{"role": "user", "content": "A person"}],
        extra_body={"output_format": {"type": "json_schema", "schema": SCHEMA}},
        extra_headers={"anthropic-beta": "structured-outputs-2025-11-13"})
    assert raw.stop_reason == "end_turn"
    _valid(raw.content[0].text)
    assert emu.requests("anthropic.messages")[-1].body["output_format"]["schema"] == SCHEMA


def test_anthropic_json_after_a_tool_result_and_stream(an) -> None:
    tools = [{"name": "get_weather", "description": "weather", "input_schema": WEATHER}]
    first = an.messages.create(model="claude-sonnet-4-5", max_tokens=800, tools=tools,
                               output_config={"format": {"type": "json_schema", "schema": SCHEMA}},
                               messages=[{"role": "user", "content": "Use get_weather for Paris"}])
    assert first.stop_reason == "tool_use"
    call = next(b for b in first.content if b.type == "tool_use")
    follow = [{"role": "user", "content": "Use get_weather for Paris"},
              {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "18C sun"}]}]
    second = an.messages.create(model="claude-sonnet-4-5", max_tokens=800, tools=tools, messages=follow,
                                output_config={"format": {"type": "json_schema", "schema": SCHEMA}})
    assert second.stop_reason == "end_turn"
    _valid(second.content[0].text)
    with an.messages.stream(model="claude-sonnet-4-5", max_tokens=800, tools=tools, messages=follow,
                            output_config={"format": {"type": "json_schema", "schema": SCHEMA}}) as s:
        streamed = s.get_final_message()
    assert streamed.content[0].text == second.content[0].text


def test_anthropic_tool_choice_any_after_a_tool_result_calls_the_next_tool(an) -> None:
    tools = [{"name": "get_weather", "input_schema": WEATHER},
             {"name": "final_result", "input_schema": SCHEMA}]
    follow = [{"role": "user", "content": "Use get_weather for Paris"},
              {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                  "input": {"city": "Paris"}}]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}]}]
    out = an.messages.create(model="claude-sonnet-4-5", max_tokens=800, tools=tools, messages=follow,
                             tool_choice={"type": "any"})
    assert out.stop_reason == "tool_use"
    call = next(b for b in out.content if b.type == "tool_use")
    assert call.name == "final_result"
    jsonschema.validate(call.input, SCHEMA)
    auto = an.messages.create(model="claude-sonnet-4-5", max_tokens=800, tools=tools, messages=follow)
    assert auto.stop_reason == "end_turn"  # auto: the model answers the tool result


def test_anthropic_thinking_tokens_in_usage_stream_and_not(an) -> None:
    kw = {"model": "claude-sonnet-4-5", "max_tokens": 4000, "thinking": {"type": "enabled", "budget_tokens": 2048},
          "messages": [{"role": "user", "content": "Why is the sky blue?"}]}
    msg = an.messages.create(**kw)
    thinking = next(b for b in msg.content if b.type == "thinking")
    assert thinking.thinking and msg.usage.output_tokens_details.thinking_tokens > 0
    assert msg.usage.output_tokens > msg.usage.output_tokens_details.thinking_tokens
    with an.messages.stream(**kw) as s:
        final = s.get_final_message()
    assert final.usage.output_tokens_details.thinking_tokens == msg.usage.output_tokens_details.thinking_tokens


def test_anthropic_max_tokens_cuts_json_with_max_tokens_stop_reason(an) -> None:
    msg = an.messages.create(model="claude-sonnet-4-5", max_tokens=5, messages=[{"role": "user", "content": "x"}],
                             output_config={"format": {"type": "json_schema", "schema": SCHEMA}})
    assert msg.stop_reason == "max_tokens" and msg.usage.output_tokens == 5


# -- OpenAI -------------------------------------------------------------------------------------------------
def test_openai_parse_with_nested_models(oa) -> None:
    out = oa.chat.completions.parse(model="gpt-4o-mini", response_format=Person,
                                    messages=[{"role": "user", "content": "A person in Oslo"}])
    assert out.choices[0].finish_reason == "stop"
    assert isinstance(out.choices[0].message.parsed, Person)


def _chat_tool_turns() -> list[dict]:
    return [{"role": "user", "content": "Use get_weather for Paris"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C sun"}]


def test_openai_json_schema_after_a_tool_result(oa) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
    fmt = {"type": "json_schema", "json_schema": {"name": "Person", "schema": SCHEMA}}
    out = oa.chat.completions.create(model="gpt-4o-mini", tools=tools, messages=_chat_tool_turns(), response_format=fmt)
    assert out.choices[0].finish_reason == "stop"
    _valid(out.choices[0].message.content)
    resp = oa.responses.create(model="gpt-4o-mini", tools=[{"type": "function", "name": "get_weather",
                                                            "parameters": WEATHER}],
                               text={"format": {"type": "json_schema", "name": "Person", "schema": SCHEMA}},
                               input=[{"role": "user", "content": "Use get_weather for Paris"},
                                      {"type": "function_call", "call_id": "c1", "name": "get_weather",
                                       "arguments": '{"city":"Paris"}'},
                                      {"type": "function_call_output", "call_id": "c1", "output": "18C"}])
    assert resp.status == "completed"
    _valid(resp.output_text)


def test_openai_tool_choice_required_after_a_tool_result(oa) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
             {"type": "function", "function": {"name": "final_result", "parameters": SCHEMA}}]
    out = oa.chat.completions.create(model="gpt-4o-mini", tools=tools, messages=_chat_tool_turns(),
                                     tool_choice="required")
    call = out.choices[0].message.tool_calls[0]
    assert out.choices[0].finish_reason == "tool_calls" and call.function.name == "final_result"
    _valid(call.function.arguments)


# -- Gemini -------------------------------------------------------------------------------------------------
def test_gemini_response_json_schema_and_response_schema(gm) -> None:
    out = gm.models.generate_content(model="gemini-2.5-flash", contents="A person in Rome",
                                     config=types.GenerateContentConfig(response_mime_type="application/json",
                                                                        response_json_schema=SCHEMA))
    assert out.candidates[0].finish_reason == types.FinishReason.STOP
    _valid(out.text)
    typed = gm.models.generate_content(model="gemini-2.5-flash", contents="A city",
                                       config=types.GenerateContentConfig(response_mime_type="application/json",
                                                                          response_schema=Address))
    assert isinstance(typed.parsed, Address)


def test_gemini_mode_any_after_a_function_response(gm) -> None:
    decls = [types.FunctionDeclaration(name="get_weather", parameters_json_schema=WEATHER),
             types.FunctionDeclaration(name="final_result", parameters_json_schema=SCHEMA)]
    contents = [types.Content(role="user", parts=[types.Part(text="Use get_weather for Paris")]),
                types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
                    name="get_weather", args={"city": "Paris"}))]),
                types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                    name="get_weather", response={"temp": "18C"}))])]
    cfg = types.GenerateContentConfig(tools=[types.Tool(function_declarations=decls)], tool_config=types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode.ANY)))
    out = gm.models.generate_content(model="gemini-2.5-flash", contents=contents, config=cfg)
    call = out.function_calls[0]
    assert call.name == "final_result"
    jsonschema.validate(call.args, SCHEMA)


def test_gemini_include_thoughts_returns_thought_parts(gm) -> None:
    cfg = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))
    out = gm.models.generate_content(model="gemini-2.5-flash", contents="Why is the sky blue?", config=cfg)
    parts = out.candidates[0].content.parts
    assert parts[0].thought is True and parts[0].text
    assert out.usage_metadata.thoughts_token_count > 0 and out.text and not parts[-1].thought
    streamed = list(gm.models.generate_content_stream(model="gemini-2.5-flash", contents="Why is the sky blue?",
                                                      config=cfg))
    thoughts = "".join(p.text for c in streamed for p in c.candidates[0].content.parts if p.thought)
    assert thoughts == parts[0].text
    plain = gm.models.generate_content(model="gemini-2.5-flash", contents="Why is the sky blue?")
    assert not any(p.thought for p in plain.candidates[0].content.parts)


# -- model lists --------------------------------------------------------------------------------------------
def test_unknown_models_are_404_at_every_vendor(oa, an, gm) -> None:
    with pytest.raises(openai.NotFoundError) as e:
        oa.chat.completions.create(model="gpt-9-turbo", messages=[{"role": "user", "content": "hi"}])
    assert e.value.code == "model_not_found"
    oa.chat.completions.create(model="gpt-4o-2024-08-06", messages=[{"role": "user", "content": "hi"}])  # a snapshot
    with pytest.raises(anthropic.NotFoundError):
        an.messages.create(model="claude-nonexistent-9", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    an.messages.create(model="claude-sonnet-4-5-20250929", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(genai_errors.ClientError) as g:
        gm.models.generate_content(model="gemini-9-ultra", contents="hi")
    assert g.value.code == 404
