"""gateway.protocols.eventstream: decoding a live Bedrock ConverseStream (the emulator's, read in arbitrary
pieces) and encoding frames that botocore's own ConverseStream parser (what a boto3 client runs) turns back into
the same events; corrupted frames and in-stream exceptions."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import botocore.session
import httpx2
import orjson
import pytest
from botocore.eventstream import EventStream
from botocore.exceptions import EventStreamError
from botocore.parsers import EventStreamJSONParser

from gateway.protocols.eventstream import (
    CONTENT_TYPE,
    EventStreamDecodeError,
    EventStreamDecoder,
    encode_event,
    encode_exception,
)
from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)
STREAM_URL = "/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        yield e


class _Raw:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self) -> Iterator[bytes]:
        yield from self.chunks


def _botocore_events(data: bytes) -> list[dict[str, Any]]:
    """What boto3's `converse_stream(...)["stream"]` yields for these bytes."""
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").output_shape.members["stream"]
    pieces = [data[i:i + 7] for i in range(0, len(data), 7)]
    return list(EventStream(_Raw(pieces), shape, EventStreamJSONParser(), "ConverseStream"))


def test_decodes_a_live_converse_stream_read_in_random_pieces(emu: EmulatorSet) -> None:
    body = orjson.dumps({"messages": [{"role": "user", "content": [{"text": "Explain the tides"}]}]})
    r = httpx2.post(emu.platform_url + STREAM_URL, content=body, headers={"authorization": "Bearer ABSKdGVzdA=="})
    assert r.status_code == 200 and r.headers["content-type"] == CONTENT_TYPE
    data, rng, decoder = r.content, random.Random(7), EventStreamDecoder()
    events, i = [], 0
    while i < len(data):
        n = rng.randint(1, 40)
        events += decoder.feed(data[i:i + n])
        i += n
    kinds = [e.event_type for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    assert all(e.message_type == "event" and not e.is_error for e in events)
    text = "".join(e.payload["delta"]["text"] for e in events if e.event_type == "contentBlockDelta")
    assert text and events[-1].payload["usage"]["outputTokens"] > 0
    assert _botocore_events(data)[-1] == {"metadata": events[-1].payload}  # same as botocore reads them


def test_encoded_frames_parse_in_botocores_converse_stream_parser() -> None:
    usage = {"inputTokens": 12, "outputTokens": 3, "totalTokens": 1040, "cacheReadInputTokens": 1025,
             "cacheWriteInputTokens": 0}
    frames = [("messageStart", {"role": "assistant"}),
              ("contentBlockDelta", {"delta": {"text": "Hi ✓"}, "contentBlockIndex": 0}),
              ("contentBlockStop", {"contentBlockIndex": 0}),
              ("contentBlockStart", {"start": {"toolUse": {"toolUseId": "tooluse_1", "name": "f"}},
                                     "contentBlockIndex": 1}),
              ("contentBlockDelta", {"delta": {"toolUse": {"input": "{\"a\": 1}"}}, "contentBlockIndex": 1}),
              ("messageStop", {"stopReason": "tool_use"}),
              ("metadata", {"usage": usage, "metrics": {"latencyMs": 5}})]
    data = b"".join(encode_event(name, payload) for name, payload in frames)
    assert _botocore_events(data) == [{name: payload} for name, payload in frames]
    decoded = EventStreamDecoder().feed(data)
    assert [(e.event_type, e.payload) for e in decoded] == frames


def test_exceptions_and_corruption() -> None:
    data = encode_event("messageStart", {"role": "assistant"}) + encode_exception("throttlingException", "slow down")
    with pytest.raises(EventStreamError, match="throttlingException"):
        _botocore_events(data)
    events = EventStreamDecoder().feed(data)
    assert events[1].is_error and events[1].event_type == "throttlingException"
    assert events[1].payload == {"message": "slow down"}
    broken = bytearray(encode_event("messageStop", {"stopReason": "end_turn"}))
    broken[20] ^= 0x01
    with pytest.raises(EventStreamDecodeError):
        EventStreamDecoder().feed(bytes(broken))
