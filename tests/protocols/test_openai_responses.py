"""OpenAI Responses adapter: conversation, parse_answer, render_answer read by the official SDK."""

from __future__ import annotations

import orjson
import pytest

from gateway.protocols.openai_responses import adapter

from ._sdk import Served, assert_declared, openai_client
from ._support import answers

REQ = {"model": "gpt-4.1", "input": "hi", "instructions": "Be brief.", "temperature": 0.2}


def test_conversation_of_items() -> None:
    body = {
        "model": "gpt-4.1",
        "instructions": "Be brief.",
        "input": [
            {"role": "developer", "content": "Use French."},
            {"role": "user", "content": [{"type": "input_text", "text": "Look:"},
                                         {"type": "input_image", "image_url": "https://x/a.png"}]},
            {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "42"},
            {"type": "message", "role": "user", "content": "And?"},
        ],
    }
    conv = adapter.conversation(body)
    assert conv.system == "Be brief.\nUse French."
    assert [t.role for t in conv.turns] == ["user", "assistant", "tool", "user"]
    assert conv.turns[0].text.startswith("Look:\n{")
    assert conv.has_tool_traffic and conv.final_user_text == "And?"
    assert adapter.conversation({"model": "m", "input": "hello"}).final_user_text == "hello"


def test_server_side_state_is_part_of_the_conversation() -> None:
    a = adapter.conversation({"model": "m", "input": "continue", "previous_response_id": "resp_1"})
    b = adapter.conversation({"model": "m", "input": "continue", "previous_response_id": "resp_2"})
    assert a != b and "resp_1" in a.system


def test_parse_answer() -> None:
    body = {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4.1-2025-04-14",
            "service_tier": "default",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"a":1}'}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    answer = adapter.parse_answer(body, "openai")
    assert answer.text == "Checking." and answer.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("call_1", "f", '{"a":1}')]
    # the stored response's id is kept: a replay hands out an id OpenAI knows (previous_response_id)
    assert answer.usage_raw is body["usage"]
    assert answer.extra == {"openai_responses": {"service_tier": "default", "id": "resp_1"}}
    assert adapter.render_answer(answer, {"model": "gpt-4.1"}, "gw-1")["id"] == "resp_1"
    unstored = adapter.parse_answer({**body, "store": False}, "openai")
    assert "id" not in unstored.extra["openai_responses"]
    assert adapter.render_answer(unstored, {"model": "gpt-4.1"}, "gw-1")["id"] != "resp_1"
    cut = {**body, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}
    assert adapter.parse_answer(cut, "openai").finish_reason == "length"


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool", "length"])
def test_sdk_reads_rendered_answer(name: str) -> None:
    answer = answers("openai_responses", "gpt-4.1-2025-04-14")[name]
    rendered = adapter.render_answer(answer, REQ, "req9")
    response = openai_client(Served(orjson.dumps(rendered))).responses.create(model="gpt-4.1", input="hi")
    assert_declared(response)
    assert response.id == "resp_req9" and response.object == "response"
    assert response.output_text == answer.text
    assert response.status == ("incomplete" if name == "length" else "completed")
    calls = [(o.call_id, o.name, o.arguments) for o in response.output if o.type == "function_call"]
    assert calls == [(c.id, c.name, c.arguments) for c in answer.tool_calls]
    assert response.usage.input_tokens == 2006 and response.usage.input_tokens_details.cached_tokens == 1920
    assert response.temperature == 0.2 and response.instructions == "Be brief."
    back = adapter.parse_answer(rendered, "openai")
    assert (back.text, back.finish_reason) == (answer.text, answer.finish_reason)


def test_refusal_round_trip() -> None:
    answer = answers("openai_responses")["text"]
    answer.text, answer.extra = "", {"openai_responses": {"refusal": "I can't help with that."}}
    rendered = adapter.render_answer(answer, REQ, "r")
    response = openai_client(Served(orjson.dumps(rendered))).responses.create(model="gpt-4.1", input="hi")
    assert response.output[0].content[0].refusal == "I can't help with that."
    assert adapter.parse_answer(rendered, "openai").extra["openai_responses"]["refusal"] == "I can't help with that."


def test_stream_flag_and_no_filter() -> None:
    assert adapter.is_stream({"stream": True}, False)
    body = {"model": "gpt-4.1", "input": "x", "stream": True}
    assert adapter.upstream_stream_body(body) == (body, None)
