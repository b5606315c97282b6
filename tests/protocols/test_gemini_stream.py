"""Gemini streams: completion is decided at the end of the stream; parser on recorded streams (every
byte split, CRLF framing), raw-JSON mid-stream errors, renderer read by `generate_content_stream`."""

from __future__ import annotations

import json

import pytest
from google.genai import errors as genai_errors
from google.genai import types

from gateway.answer import Finish, Start, TextDelta, ToolCallArgs, ToolCallStart
from gateway.protocols.gemini import adapter
from gateway.protocols.gemini_stream import GeminiStreamParser, split_call_id
from gateway.protocols.sse import split_events

from ._sdk import genai_client, sse
from ._support import TEXT, answer_fields, answers, assert_split_invariant, recorded, run_parser

REQ = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def make() -> GeminiStreamParser:
    return GeminiStreamParser("gemini")


def test_text_stream_finishes_only_at_end_of_stream() -> None:
    data = recorded("gemini_text.sse")
    events = assert_split_invariant(make, data)
    assert events[0] == Start("gemini-2.5-flash")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == TEXT
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.finish_reason == "stop"
    assert finish.usage_raw["cachedContentTokenCount"] == 2048  # the last chunk's usage, not a partial one
    parser = make()
    fed = parser.feed(data)
    assert not any(isinstance(e, Finish) for e in fed)  # no terminator: not complete before EOF
    assert isinstance(parser.end()[-1], Finish) and parser.answer() is not None


def test_function_calls_carry_thought_signature_in_their_id() -> None:
    events = assert_split_invariant(make, recorded("gemini_tools.sse"))
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [s.name for s in starts] == ["get_weather", "get_time"]
    assert split_call_id(starts[0].id)[1] == "CiQBVKhc7sigAA==" and split_call_id(starts[1].id)[1] is None
    assert [e.delta for e in events if isinstance(e, ToolCallArgs)] == ['{"city":"Paris"}', '{"tz":"Europe/Paris"}']
    assert isinstance(events[-1], Finish) and events[-1].finish_reason == "tool_calls"


def test_raw_json_error_mid_stream() -> None:
    events = assert_split_invariant(make, recorded("gemini_error.sse"))
    _, parser = run_parser(make, [recorded("gemini_error.sse")])
    assert parser.error == {"code": 503, "message": "The model is overloaded. Please try again later.",
                            "status": "UNAVAILABLE"}
    assert not any(isinstance(e, Finish) for e in events) and parser.answer() is None


def test_stream_without_finish_reason_is_incomplete() -> None:
    data = recorded("gemini_text.sse")
    cut = data[: data.rindex(b"data: ")]
    _, parser = run_parser(make, [cut])
    assert parser.answer() is None and parser.error is None


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool", "length"])
def test_sdk_stream_reads_replay(name: str) -> None:
    answer = answers("gemini", "gemini-2.5-flash")[name]
    body = b"".join(adapter.replay(answer, REQ, "resp1", False, chunk_chars=3))
    for block in split_events(body):  # every chunk is a GenerateContentResponse with declared fields only
        types.GenerateContentResponse.model_validate(json.loads(block[len(b"data: "):]))
    client = genai_client(sse(body, piece=9))
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    text = "".join(p.text for c in chunks for p in (c.candidates[0].content.parts or []) if p.text)
    assert text == answer.text
    calls = [(fc.name, fc.args) for c in chunks for fc in (c.function_calls or [])]
    assert calls == [(t.name, json.loads(t.arguments)) for t in answer.tool_calls]
    last = chunks[-1]
    assert last.candidates[0].finish_reason.value == {"length": "MAX_TOKENS"}.get(name, "STOP")
    assert last.usage_metadata.prompt_token_count == 2006
    assert last.usage_metadata.cached_content_token_count == 1920
    assert last.model_version == "gemini-2.5-flash" and last.response_id == "resp1"


def test_replay_round_trips_through_our_parser() -> None:
    for answer in answers("gemini").values():
        _, parser = run_parser(make, [b"".join(adapter.replay(answer, REQ, "r", False, chunk_chars=2))])
        back = parser.answer()
        assert back is not None and answer_fields(back) == answer_fields(answer)
        assert back.usage_raw == answer.usage_raw


def test_replayed_signature_goes_back_to_the_sdk() -> None:
    _, parser = run_parser(make, [recorded("gemini_tools.sse")])
    answer = parser.answer()
    assert answer is not None
    body = b"".join(adapter.replay(answer, REQ, "r", False))
    chunks = list(genai_client(sse(body)).models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert parts[0].thought_signature is not None and parts[0].function_call.name == "get_weather"


def test_renderer_error_is_raised_by_sdk() -> None:
    r = adapter.stream_renderer(REQ, "r", False)
    body = r.render(Start("gemini-2.5-flash")) + r.render(TextDelta("par")) + r.error(503, "overloaded")
    with pytest.raises(genai_errors.APIError, match="overloaded"):
        list(genai_client(sse(body)).models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
