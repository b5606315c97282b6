"""OpenAI Chat streams: the parser on recorded streams (every byte split), completion rules, the
renderer read by the official SDK, and the usage-chunk filter."""

from __future__ import annotations

import openai
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.answer import Finish, Start, TextDelta, ToolCallArgs, ToolCallStart
from gateway.protocols.openai_chat import adapter
from gateway.protocols.openai_chat_stream import ChatStreamParser, UsageChunkFilter
from gateway.protocols.sse import split_events

from ._sdk import assert_declared, openai_client, sse
from ._support import TEXT, answer_fields, answers, assert_split_invariant, recorded, run_parser

REQ = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def make() -> ChatStreamParser:
    return ChatStreamParser("openai")


def test_text_stream_events_and_usage_under_every_split() -> None:
    events = assert_split_invariant(make, recorded("openai_chat_text.sse"))
    assert events[0] == Start("gpt-4o-2024-08-06")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == TEXT
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.finish_reason == "stop"
    assert finish.usage_raw["prompt_tokens"] == 2006
    assert finish.usage_raw["prompt_tokens_details"]["cached_tokens"] == 1920


def test_tool_stream_under_every_split() -> None:
    events = assert_split_invariant(make, recorded("openai_chat_tools.sse"))
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert starts == [ToolCallStart(0, "call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather"),
                      ToolCallStart(1, "call_ABCdef123", "get_time")]
    args = {i: "".join(e.delta for e in events if isinstance(e, ToolCallArgs) and e.index == i) for i in (0, 1)}
    assert args == {0: '{"city":"Paris"}', 1: '{"tz":"Europe/Paris"}'}
    _, parser = run_parser(make, [recorded("openai_chat_tools.sse")])
    answer = parser.answer()
    assert answer is not None and answer.finish_reason == "tool_calls"
    assert answer.extra["openai_chat"] == {"system_fingerprint": "fp_eb9dce56a8", "service_tier": "default"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=4000), max_size=12))
def test_random_multi_splits_give_identical_events(cuts: list[int]) -> None:
    data = recorded("openai_chat_tools.sse")
    points = sorted({c % len(data) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    assert run_parser(make, pieces)[0] == run_parser(make, [data])[0]


def test_mid_stream_error_is_never_complete() -> None:
    events = assert_split_invariant(make, recorded("openai_chat_error.sse"))
    _, parser = run_parser(make, [recorded("openai_chat_error.sse")])
    assert parser.error is not None and parser.error["type"] == "server_error"
    assert not any(isinstance(e, Finish) for e in events)
    assert parser.answer() is None


def test_completion_needs_finish_reason_and_usage_chunk_or_done() -> None:
    data = recorded("openai_chat_text.sse")
    blocks = split_events(data)
    # cut before the usage chunk and [DONE]: finish_reason alone does not complete the stream
    cut = b"\n\n".join(blocks[:-2]) + b"\n\n"
    events, parser = run_parser(make, [cut])
    assert not any(isinstance(e, Finish) for e in events) and parser.answer() is None
    # the usage chunk completes it even if [DONE] never comes
    events, parser = run_parser(make, [b"\n\n".join(blocks[:-1]) + b"\n\n"])
    assert isinstance(events[-1], Finish) and parser.answer() is not None
    # without include_usage: finish_reason + [DONE]
    no_usage = b"\n\n".join([*blocks[:-2], blocks[-1]]) + b"\n\n"
    events, parser = run_parser(make, [no_usage])
    assert isinstance(events[-1], Finish) and events[-1].usage_raw == {}
    # a stream cut mid-text is incomplete
    events, parser = run_parser(make, [data[: len(data) // 2]])
    assert parser.answer() is None


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool", "length"])
@pytest.mark.parametrize("include_usage", [True, False])
def test_sdk_create_stream_reads_replay(name: str, include_usage: bool) -> None:
    answer = answers("openai_chat", "gpt-4o-2024-08-06")[name]
    body = b"".join(adapter.replay(answer, REQ, "req123", include_usage, chunk_chars=3))
    client = openai_client(sse(body, piece=7))
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=REQ["messages"], stream=True))
    assert_declared(*chunks)
    assert all(c.id == "chatcmpl-req123" and c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == answer.text
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [answer.finish_reason]
    usage_chunks = [c for c in chunks if c.usage is not None]
    if include_usage:
        assert len(usage_chunks) == 1 and usage_chunks[0].choices == []
        assert usage_chunks[0].usage.prompt_tokens == 2006
        assert usage_chunks[0].usage.prompt_tokens_details.cached_tokens == 1920
    else:
        assert usage_chunks == []


@pytest.mark.parametrize("name", ["text", "tools", "text_and_tool", "length"])
def test_sdk_stream_helper_final_completion(name: str) -> None:
    answer = answers("openai_chat", "gpt-4o-2024-08-06")[name]
    body = b"".join(adapter.replay(answer, REQ, "req123", True, chunk_chars=4))
    client = openai_client(sse(body))
    with client.chat.completions.stream(model="gpt-4o", messages=REQ["messages"],
                                        stream_options={"include_usage": True}) as stream:
        for _ in stream:
            pass
        if answer.finish_reason == "length":  # the helper refuses a cut answer, live or replayed
            with pytest.raises(openai.LengthFinishReasonError) as info:
                stream.get_final_completion()
            final = info.value.completion
        else:
            final = stream.get_final_completion()
    choice = final.choices[0]
    assert (choice.message.content or "") == answer.text
    assert choice.finish_reason == answer.finish_reason
    calls = [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    assert calls == [(c.id, c.name, c.arguments) for c in answer.tool_calls]
    assert final.usage is not None and final.usage.total_tokens == 2306


def test_replay_round_trips_through_our_parser() -> None:
    for answer in answers("openai_chat").values():
        body = b"".join(adapter.replay(answer, REQ, "r", True, chunk_chars=2))
        _, parser = run_parser(make, [body])
        back = parser.answer()
        assert back is not None and answer_fields(back) == answer_fields(answer)
        assert back.usage_raw == answer.usage_raw


def test_replay_keeps_refusal_and_fingerprint() -> None:
    answer = answers("openai_chat")["text"]
    answer.text = ""
    answer.extra = {"openai_chat": {"refusal": "I can't help with that.", "system_fingerprint": "fp_1"}}
    body = b"".join(adapter.replay(answer, REQ, "r", False))
    chunks = list(openai_client(sse(body)).chat.completions.create(model="gpt-4o", messages=[], stream=True))
    assert "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices) == "I can't help with that."
    assert {c.system_fingerprint for c in chunks} == {"fp_1"}


def test_renderer_error_is_raised_by_sdk() -> None:
    r = adapter.stream_renderer(REQ, "r", False)
    body = r.render(Start("gpt-4o")) + r.render(TextDelta("par")) + r.error(502, "upstream broke off")
    stream = openai_client(sse(body)).chat.completions.create(model="gpt-4o", messages=[], stream=True)
    with pytest.raises(Exception, match="upstream broke off"):
        list(stream)


def test_filter_restores_what_the_client_asked_for() -> None:
    data = recorded("openai_chat_text.sse")
    f = UsageChunkFilter()
    kept = [out for ev in split_events(data) if (out := f(ev)) is not None]
    assert len(kept) == len(split_events(data)) - 1  # the usage-only chunk is gone
    for ev in kept[:-1]:
        obj = orjson.loads(ev[len(b"data: "):])
        assert "usage" not in obj and obj["choices"]
    assert kept[-1] == b"data: [DONE]"
    # the restored stream is a valid no-usage stream for the SDK
    client = openai_client(sse(b"\n\n".join(kept) + b"\n\n"))
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=[], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == TEXT
    assert all(c.usage is None for c in chunks)


def test_filter_handles_spaced_json() -> None:
    f = UsageChunkFilter()
    spaced = b'data: {"id": "x", "choices": [{"index": 0, "delta": {"content": "a"}}], "usage": null}'
    assert orjson.loads(f(spaced)[6:]) == {"id": "x", "choices": [{"index": 0, "delta": {"content": "a"}}]}
    assert f(b'data: {"id": "x", "choices": [], "usage": {"prompt_tokens": 1}}') is None
    # a "usage" inside content text is left alone
    text = b'data: {"choices":[{"index":0,"delta":{"content":"the \\"usage\\":null key"}}]}'
    assert f(text) == text


def test_azure_stream_with_content_filter_chunks_parses() -> None:
    """Azure OpenAI opens with a prompt-annotation chunk (empty `choices`, `model: ""`) and sends annotation
    chunks without `delta` after the finish; the parser skips both and keeps the model of the first real chunk."""
    import httpx2
    import orjson

    from gateway.protocols import get_adapter
    from gateway_dev.emulators import EmulatorSet

    with EmulatorSet(latency="zero") as emu:
        r = httpx2.post(f"{emu.platform_url}/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
                        headers={"api-key": "k"},
                        content=orjson.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True,
                                              "stream_options": {"include_usage": True}}))
    assert b'"choices":[]' in r.content.split(b"\n\n")[0] and b"content_filter_offsets" in r.content
    parser = get_adapter("openai_chat").stream_parser("azure")
    parser.feed(r.content)
    parser.end()
    answer = parser.answer()
    assert parser.error is None and answer is not None
    assert answer.model == "gpt-4o" and answer.text and answer.usage_raw["completion_tokens"] > 0
