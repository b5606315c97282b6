"""OpenAI Responses streams: parser on recorded streams (every byte split), renderer read by the SDK's
`responses.stream` helper and raw event iteration."""

from __future__ import annotations

import pytest

from gateway.answer import Finish, Start, TextDelta, ToolCallArgs, ToolCallStart
from gateway.protocols.openai_responses import adapter
from gateway.protocols.openai_responses_stream import ResponsesStreamParser
from gateway.protocols.sse import split_events

from ._sdk import assert_declared, openai_client, sse
from ._support import TEXT, answer_fields, answers, assert_split_invariant, recorded, run_parser

REQ = {"model": "gpt-4.1", "input": "hi", "instructions": "Be brief.", "stream": True}
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]


def make() -> ResponsesStreamParser:
    return ResponsesStreamParser("openai")


def test_text_stream_under_every_split() -> None:
    events = assert_split_invariant(make, recorded("openai_responses_text.sse"))
    assert events[0] == Start("gpt-4.1-2025-04-14")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == TEXT
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.finish_reason == "stop"
    assert finish.usage_raw["input_tokens_details"]["cached_tokens"] == 1920


def test_function_call_stream_under_every_split() -> None:
    events = assert_split_invariant(make, recorded("openai_responses_tools.sse"))
    assert [e for e in events if isinstance(e, ToolCallStart)] == [ToolCallStart(0, "call_12345xyz", "get_weather")]
    assert "".join(e.delta for e in events if isinstance(e, ToolCallArgs)) == '{"city":"Paris"}'
    assert isinstance(events[-1], Finish) and events[-1].finish_reason == "tool_calls"


def test_stream_without_terminal_event_is_incomplete() -> None:
    blocks = split_events(recorded("openai_responses_text.sse"))
    _, parser = run_parser(make, [b"\n\n".join(blocks[:-1]) + b"\n\n"])
    assert parser.answer() is None


def test_error_event_and_failed_response() -> None:
    blocks = split_events(recorded("openai_responses_text.sse"))
    err = (b'event: error\ndata: {"type":"error","code":"server_error","message":"boom","param":null,'
           b'"sequence_number":9}')
    _, parser = run_parser(make, [b"\n\n".join([*blocks[:5], err]) + b"\n\n"])
    assert parser.error == {"message": "boom", "code": "server_error", "type": "error"} and parser.answer() is None
    failed = (b'event: response.failed\ndata: {"type":"response.failed","sequence_number":9,"response":'
              b'{"status":"failed","error":{"code":"server_error","message":"The model failed"}}}')
    _, parser = run_parser(make, [b"\n\n".join([*blocks[:5], failed]) + b"\n\n"])
    assert parser.error == {"code": "server_error", "message": "The model failed"}


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool"])
def test_sdk_stream_helper_reads_replay(name: str) -> None:
    answer = answers("openai_responses", "gpt-4.1-2025-04-14")[name]
    body = b"".join(adapter.replay(answer, {**REQ, "tools": TOOLS}, "req7", False, chunk_chars=3))
    client = openai_client(sse(body, piece=11))
    raw = list(openai_client(sse(body)).responses.create(model="gpt-4.1", input="hi", stream=True))
    assert_declared(*raw)
    with client.responses.stream(model="gpt-4.1", input="hi") as stream:
        kinds = [ev.type for ev in stream]
        final = stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert final.id == "resp_req7" and final.status == "completed" and final.model == "gpt-4.1-2025-04-14"
    assert final.output_text == answer.text
    calls = [(o.call_id, o.name, o.arguments) for o in final.output if o.type == "function_call"]
    assert calls == [(c.id, c.name, c.arguments) for c in answer.tool_calls]
    assert final.usage.input_tokens == 2006 and final.usage.input_tokens_details.cached_tokens == 1920
    assert final.instructions == "Be brief."


def test_length_ends_with_response_incomplete() -> None:
    answer = answers("openai_responses")["length"]
    body = b"".join(adapter.replay(answer, REQ, "r", False, chunk_chars=5))
    events = list(openai_client(sse(body)).responses.create(model="gpt-4.1", input="hi", stream=True))
    sequence = [e.sequence_number for e in events]
    assert sequence == list(range(len(events)))
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.incomplete_details.reason == "max_output_tokens"
    assert last.response.output[0].content[0].text == answer.text


def test_event_sequence_of_a_text_answer() -> None:
    body = b"".join(adapter.replay(answers("openai_responses")["text"], REQ, "r", False, chunk_chars=8))
    events = list(openai_client(sse(body)).responses.create(model="gpt-4.1", input="hi", stream=True))
    assert_declared(*events)
    kinds = [e.type for e in events]
    assert kinds == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.content_part.added", *["response.output_text.delta"] * 3,
                     "response.output_text.done", "response.content_part.done", "response.output_item.done",
                     "response.completed"]


def test_refusal_is_replayed_as_a_refusal_part() -> None:
    answer = answers("openai_responses")["text"]
    answer.text, answer.extra = "", {"openai_responses": {"refusal": "I can't help with that."}}
    body = b"".join(adapter.replay(answer, REQ, "r", False))
    with openai_client(sse(body)).responses.stream(model="gpt-4.1", input="hi") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    parts = final.output[0].content
    assert [p.type for p in parts] == ["output_text", "refusal"] and parts[1].refusal == "I can't help with that."
    _, parser = run_parser(make, [body])
    assert parser.answer().extra["openai_responses"]["refusal"] == "I can't help with that."  # type: ignore[union-attr]


def test_replay_round_trips_through_our_parser() -> None:
    for answer in answers("openai_responses").values():
        _, parser = run_parser(make, [b"".join(adapter.replay(answer, REQ, "r", False, chunk_chars=2))])
        back = parser.answer()
        assert back is not None and answer_fields(back) == answer_fields(answer)
        assert back.usage_raw == answer.usage_raw


def test_renderer_error_reaches_the_sdk_as_an_error_event() -> None:
    r = adapter.stream_renderer(REQ, "r", False)
    body = r.render(Start("gpt-4.1")) + r.render(TextDelta("par")) + r.error(502, "upstream broke off")
    events = list(openai_client(sse(body)).responses.create(model="gpt-4.1", input="hi", stream=True))
    last = events[-1]  # Responses streams report errors as an `error` event, not an exception
    assert last.type == "error" and last.message == "upstream broke off" and last.code == "server_error"
    assert [e.sequence_number for e in events] == list(range(len(events)))
