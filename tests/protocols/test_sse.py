"""The incremental SSE decoder: any byte split, every line-ending style, comments, multi-line data."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.protocols.sse import SSEDecoder, SSEEvent, split_events

STREAM = ("event: a\ndata: {\"x\": \"é世🎉\"}\n\n"
          ": keep-alive comment\n\n"
          "id: 7\nretry: 100\nevent: b\ndata: line1\ndata: line2\n\n"
          "data: [DONE]\n\n").encode()


def decode(pieces: list[bytes]) -> list[SSEEvent]:
    dec = SSEDecoder()
    out = [ev for p in pieces for ev in dec.feed(p)]
    return out + dec.flush()


EXPECTED = [SSEEvent("a", '{"x": "é世🎉"}'.encode()), SSEEvent("b", b"line1\nline2"), SSEEvent(None, b"[DONE]")]


def test_whole_stream() -> None:
    assert decode([STREAM]) == EXPECTED


def test_every_split_point_and_byte_by_byte() -> None:
    for i in range(len(STREAM)):
        assert decode([STREAM[:i], STREAM[i:]]) == EXPECTED, i
    assert decode([STREAM[i:i + 1] for i in range(len(STREAM))]) == EXPECTED


def test_crlf_and_cr_line_ends_split_anywhere() -> None:
    for ending in (b"\r\n", b"\r"):
        data = STREAM.replace(b"\n", ending)
        for i in range(len(data)):
            assert decode([data[:i], data[i:]]) == EXPECTED, (ending, i)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(STREAM)), max_size=20), st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_random_splits(cuts: list[int], ending: bytes) -> None:
    data = STREAM.replace(b"\n", ending)
    points = sorted(set(c % (len(data) + 1) for c in cuts))
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    assert decode(pieces) == EXPECTED


def test_non_field_lines_are_kept_for_raw_json_errors() -> None:
    raw = b'{\n  "error": {\n    "code": 503\n  }\n}\n'
    events = decode([raw])
    assert events == [SSEEvent(None, None, [b"{", b'  "error": {', b'    "code": 503', b"  }", b"}"])]


def test_unterminated_last_event_comes_out_on_flush_only() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: {\"a\":1}") == [] and dec.pending
    assert dec.flush() == [SSEEvent(None, b'{"a":1}')] and not dec.pending


def test_data_without_space_and_empty_data() -> None:
    assert decode([b"data:{}\n\ndata\n\n"]) == [SSEEvent(None, b"{}"), SSEEvent(None, b"")]


def test_split_events() -> None:
    assert split_events(b"data: 1\r\n\r\ndata: 2\n\n\n") == [b"data: 1", b"data: 2"]
