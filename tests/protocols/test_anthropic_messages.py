"""Anthropic Messages adapter: conversation, parse_answer, render_answer read by the official SDK."""

from __future__ import annotations

import json

import anthropic
import orjson
import pytest

from gateway.protocols.anthropic_messages import adapter

from ._sdk import Served, anthropic_client, assert_declared
from ._support import answers

REQ = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}]}
LIVE = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2000,
              "output_tokens": 30, "service_tier": "standard"},
}


def test_conversation_ignores_cache_markers_and_marks_tool_turns() -> None:
    body = {
        "model": "claude-sonnet-4-5", "max_tokens": 10,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                                         {"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny",
                                          "cache_control": {"type": "ephemeral"}}]},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [{"name": "f", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
    }
    conv = adapter.conversation(body)
    assert conv.system == "Be brief."
    assert [t.role for t in conv.turns] == ["user", "assistant", "tool", "user"]
    assert conv.has_tool_traffic and conv.final_user_text == "Thanks"
    assert conv.tools == [{"name": "f", "input_schema": {"type": "object"}}]
    unmarked = json.loads(json.dumps(body).replace(', "cache_control": {"type": "ephemeral"}', ""))
    assert adapter.conversation(unmarked) == conv  # provider-cache markers never change the key


def test_parse_answer() -> None:
    answer = adapter.parse_answer(LIVE, "anthropic")
    assert answer.text == "Checking." and answer.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("toolu_1", "get_weather", '{"city":"Paris"}')]
    assert answer.usage_raw is LIVE["usage"]
    # the message id is kept for the next request's cache diagnostics (provider_cache/explain.py)
    assert answer.extra == {"anthropic_messages": {"stop_reason": "tool_use", "vendor_message_id": LIVE["id"]}}
    cut = {**LIVE, "content": [{"type": "text", "text": "x"}], "stop_reason": "max_tokens"}
    assert adapter.parse_answer(cut, "anthropic").finish_reason == "length"
    stopped = {**LIVE, "stop_reason": "stop_sequence", "stop_sequence": "END"}
    assert adapter.parse_answer(stopped, "anthropic").extra["anthropic_messages"]["stop_sequence"] == "END"


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool", "length"])
def test_sdk_reads_rendered_answer(name: str) -> None:
    answer = answers("anthropic_messages", "claude-sonnet-4-5-20250929")[name]
    rendered = adapter.render_answer(answer, REQ, "req3")
    message = anthropic_client(Served(orjson.dumps(rendered))).messages.create(**REQ)
    assert_declared(message)
    assert message.id == "msg_req3" and message.type == "message" and message.role == "assistant"
    assert "".join(b.text for b in message.content if b.type == "text") == answer.text
    assert [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"] == [
        (c.id, c.name, json.loads(c.arguments)) for c in answer.tool_calls]
    assert message.stop_reason == {"text": "end_turn", "tools": "tool_use", "text_and_tool": "tool_use",
                                   "length": "max_tokens"}[name]
    assert message.usage.cache_read_input_tokens == 1920 and message.usage.input_tokens == 38


def test_live_answer_round_trip_is_exact() -> None:
    rendered = adapter.render_answer(adapter.parse_answer(LIVE, "anthropic"), REQ, "msg_01")
    assert {k: v for k, v in rendered.items()} == LIVE


def test_special_blocks_are_replayed_verbatim() -> None:
    live = {**LIVE, "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}, *LIVE["content"]]}
    rendered = adapter.render_answer(adapter.parse_answer(live, "anthropic"), REQ, "msg_01")
    assert rendered["content"] == live["content"]


@pytest.mark.parametrize(("status", "exc"), [(400, anthropic.BadRequestError), (401, anthropic.AuthenticationError),
                                             (429, anthropic.RateLimitError), (529, anthropic.APIStatusError)])
def test_error_body_is_raised_by_sdk(status: int, exc: type[Exception]) -> None:
    body = adapter.error_body(status, "nope")
    with pytest.raises(exc, match="nope"):
        anthropic_client(Served(orjson.dumps(body), status=status)).messages.create(**REQ)


def test_flags() -> None:
    assert adapter.model_of({"model": "claude-x"}, None) == "claude-x"
    assert adapter.is_stream({"stream": True}, False)
    assert adapter.upstream_stream_body(REQ) == (REQ, None)
