"""Shared test material: recorded vendor streams, sample answers, and the split-invariance check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.answer import Answer, Event, ToolCall
from gateway.protocols.base import StreamParser

DATA = Path(__file__).parent / "data"
TEXT = "Héllo wörld 世界 🎉!"


def recorded(name: str) -> bytes:
    """A vendor stream recorded in the exact wire format of the reference (tests/protocols/data)."""
    return (DATA / name).read_bytes()


def run_parser(make: Callable[[], StreamParser], pieces: list[bytes]) -> tuple[list[Event], StreamParser]:
    parser = make()
    events: list[Event] = []
    for piece in pieces:
        events.extend(parser.feed(piece))
    events.extend(parser.end())
    return events, parser


def assert_split_invariant(make: Callable[[], StreamParser], data: bytes, stride: int = 1) -> list[Event]:
    """Feeding `data` whole, split at every byte boundary (every `stride`-th for long streams), and
    byte by byte gives the same events, the same answer and the same error."""
    whole, ref = run_parser(make, [data])
    for i in range(1, len(data), stride):
        events, parser = run_parser(make, [data[:i], data[i:]])
        assert events == whole, f"split at byte {i}"
        assert parser.error == ref.error, f"split at byte {i}"
    events, parser = run_parser(make, [data[i:i + 1] for i in range(len(data))])
    assert events == whole
    assert parser.answer() == ref.answer()
    return whole


USAGE = {
    "openai_chat": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                    "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                  "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
    "openai_responses": {"input_tokens": 2006, "input_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 0},
                         "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2306},
    "anthropic_messages": {"input_tokens": 38, "cache_creation_input_tokens": 48, "cache_read_input_tokens": 1920,
                           "cache_creation": {"ephemeral_5m_input_tokens": 48, "ephemeral_1h_input_tokens": 0},
                           "output_tokens": 300, "service_tier": "standard"},
    "gemini": {"promptTokenCount": 2006, "cachedContentTokenCount": 1920, "candidatesTokenCount": 300,
               "totalTokenCount": 2306},
}


def answers(dialect: str, model: str = "test-model") -> dict[str, Answer]:
    """The answer shapes every adapter must replay: text, tool calls, a length cut, cache usage."""
    usage = USAGE[dialect]
    return {
        "text": Answer(text=TEXT, model=model, usage_raw=usage),
        "tools": Answer(text="", model=model, finish_reason="tool_calls", usage_raw=usage, tool_calls=[
            ToolCall("call_1", "get_weather", '{"city":"Paris"}'),
            ToolCall("call_2", "get_time", '{"tz":"Europe/Paris"}'),
        ]),
        "text_and_tool": Answer(text="Let me check.", model=model, finish_reason="tool_calls", usage_raw=usage,
                                tool_calls=[ToolCall("call_9", "lookup", '{"q":"x"}')]),
        "length": Answer(text="The answer is cut", model=model, finish_reason="length", usage_raw=usage),
    }


def answer_fields(a: Answer) -> tuple[Any, ...]:
    """What must survive a render → parse round trip (ids may be re-minted by a vendor format)."""
    return (a.text, a.finish_reason, [(c.name, c.arguments) for c in a.tool_calls])
