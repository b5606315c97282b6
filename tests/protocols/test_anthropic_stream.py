"""Anthropic Messages streams: parser on recorded streams (every byte split), usage accumulation like
the SDK, renderer read by `client.messages.stream(...).get_final_message()`."""

from __future__ import annotations

import json

import anthropic
import pytest

from gateway.answer import Answer, Finish, Start, TextDelta, ToolCallArgs, ToolCallStart
from gateway.protocols.anthropic_messages import adapter
from gateway.protocols.anthropic_stream import AnthropicStreamParser
from gateway.protocols.sse import split_events

from ._sdk import anthropic_client, assert_declared, sse
from ._support import TEXT, answer_fields, answers, assert_split_invariant, recorded, run_parser

REQ = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}],
       "stream": True}


def make() -> AnthropicStreamParser:
    return AnthropicStreamParser("anthropic")


def test_text_stream_keeps_cache_usage_from_message_start() -> None:
    events = assert_split_invariant(make, recorded("anthropic_text.sse"))
    assert events[0] == Start("claude-sonnet-4-5-20250929")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == TEXT
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.finish_reason == "stop"
    usage = finish.usage_raw
    # message_delta carried only output_tokens: the cache counts of message_start survive
    assert usage["input_tokens"] == 25 and usage["cache_creation_input_tokens"] == 248
    assert usage["cache_read_input_tokens"] == 1800 and usage["output_tokens"] == 15


def test_tool_stream_under_every_split() -> None:
    events = assert_split_invariant(make, recorded("anthropic_tools.sse"))
    assert [e for e in events if isinstance(e, ToolCallStart)] == [
        ToolCallStart(0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")]
    assert "".join(e.delta for e in events if isinstance(e, ToolCallArgs)) == '{"city": "Paris", "unit": "c"}'
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.finish_reason == "tool_calls"
    assert finish.usage_raw["output_tokens"] == 89
    _, parser = run_parser(make, [recorded("anthropic_tools.sse")])
    answer = parser.answer()
    assert answer is not None and answer.text == "Let me check."
    assert answer.extra == {"anthropic_messages": {"stop_reason": "tool_use",  # the id: for cache diagnostics
                                                   "vendor_message_id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY"}}


def test_error_event_and_cut_stream() -> None:
    events = assert_split_invariant(make, recorded("anthropic_error.sse"))
    _, parser = run_parser(make, [recorded("anthropic_error.sse")])
    assert parser.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert not any(isinstance(e, Finish) for e in events) and parser.answer() is None
    blocks = split_events(recorded("anthropic_text.sse"))
    _, parser = run_parser(make, [b"\n\n".join(blocks[:-1]) + b"\n\n"])  # no message_stop
    assert parser.answer() is None


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool", "length"])
def test_sdk_final_message_reads_replay(name: str) -> None:
    answer = answers("anthropic_messages", "claude-sonnet-4-5-20250929")[name]
    body = b"".join(adapter.replay(answer, REQ, "req5", False, chunk_chars=3))
    client = anthropic_client(sse(body, piece=5))
    assert_declared(*anthropic_client(sse(body)).messages.create(model="c", max_tokens=5, messages=[], stream=True))
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=1024, messages=REQ["messages"]) as stream:
        kinds = [ev.type for ev in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert final.id == "msg_req5" and final.model == "claude-sonnet-4-5-20250929"
    assert "".join(b.text for b in final.content if b.type == "text") == answer.text
    assert [(b.id, b.name, b.input) for b in final.content if b.type == "tool_use"] == [
        (c.id, c.name, json.loads(c.arguments)) for c in answer.tool_calls]
    assert final.stop_reason == {"text": "end_turn", "tools": "tool_use", "text_and_tool": "tool_use",
                                 "length": "max_tokens"}[name]
    u = final.usage
    assert (u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens, u.output_tokens) == (
        38, 48, 1920, 300)
    assert u.cache_creation is not None and u.cache_creation.ephemeral_5m_input_tokens == 48


def test_replay_of_live_stream_keeps_stop_sequence() -> None:
    answer = answers("anthropic_messages")["text"]
    answer.extra = {"anthropic_messages": {"stop_reason": "stop_sequence", "stop_sequence": "END"}}
    body = b"".join(adapter.replay(answer, REQ, "r", False))
    with anthropic_client(sse(body)).messages.stream(model="c", max_tokens=5, messages=[]) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "stop_sequence" and final.stop_sequence == "END"


def test_thinking_blocks_are_replayed_with_their_signature() -> None:
    content = [{"type": "thinking", "thinking": "Let me think about 世界.", "signature": "EqQBCkYIARgCKkA"},
               {"type": "text", "text": "Done."},
               {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": [1, 2]}}]
    answer = Answer(text="Done.", model="claude-sonnet-4-5", finish_reason="tool_calls",
                    usage_raw=answers("anthropic_messages")["text"].usage_raw,
                    extra={"anthropic_messages": {"stop_reason": "tool_use", "content": content}})
    body = b"".join(adapter.replay(answer, REQ, "r", False, chunk_chars=4))
    with anthropic_client(sse(body)).messages.stream(model="c", max_tokens=5, messages=[]) as stream:
        final = stream.get_final_message()
    assert [b.to_dict() for b in final.content] == [
        {"type": "thinking", "thinking": "Let me think about 世界.", "signature": "EqQBCkYIARgCKkA"},
        {"type": "text", "text": "Done."},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": [1, 2]}}]
    # and our own parser folds the replay back into the same blocks
    _, parser = run_parser(make, [body])
    back = parser.answer()
    assert back is not None and back.extra["anthropic_messages"]["content"] == content


def test_replay_round_trips_through_our_parser() -> None:
    for answer in answers("anthropic_messages").values():
        _, parser = run_parser(make, [b"".join(adapter.replay(answer, REQ, "r", False, chunk_chars=2))])
        back = parser.answer()
        assert back is not None and answer_fields(back) == answer_fields(answer)
        u = back.usage_raw
        assert (u["input_tokens"], u["cache_creation_input_tokens"], u["cache_read_input_tokens"],
                u["output_tokens"]) == (38, 48, 1920, 300)


def test_renderer_without_answer_streams_usage_in_message_delta() -> None:
    r = adapter.stream_renderer(REQ, "r", False)
    usage = answers("anthropic_messages")["text"].usage_raw
    body = b"".join(r.render(e) for e in [Start("claude"), TextDelta("hi"), Finish("stop", usage)]) + r.close()
    with anthropic_client(sse(body)).messages.stream(model="c", max_tokens=5, messages=[]) as stream:
        final = stream.get_final_message()
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens, final.usage.output_tokens) == (38, 1920, 300)


def test_renderer_error_is_raised_by_sdk() -> None:
    r = adapter.stream_renderer(REQ, "r", False)
    body = r.render(Start("claude")) + r.render(TextDelta("par")) + r.error(529, "Overloaded")
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"), \
            anthropic_client(sse(body)).messages.stream(model="c", max_tokens=5, messages=[]) as stream:
        stream.get_final_message()
