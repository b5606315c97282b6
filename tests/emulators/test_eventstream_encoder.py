"""The Bedrock emulator's event-stream encoder, read back with botocore's decoder: lengths, both CRCs, string
headers, frames split across reads, and a corrupted frame refused."""

from __future__ import annotations

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from gateway_dev.emulators.eventstream import encode_message, event, exception


def test_frames_decode_in_botocore_even_split_byte_by_byte() -> None:
    data = event("contentBlockDelta", {"delta": {"text": "Hé ✓"}, "contentBlockIndex": 0}) + exception(
        "throttlingException", "Too many requests")
    buffer = EventStreamBuffer()
    messages = []
    for i in range(len(data)):
        buffer.add_data(data[i:i + 1])
        messages += list(buffer)
    assert [m.headers for m in messages] == [
        {":event-type": "contentBlockDelta", ":content-type": "application/json", ":message-type": "event"},
        {":exception-type": "throttlingException", ":content-type": "application/json", ":message-type": "exception"}]
    assert messages[0].payload == '{"delta":{"text":"Hé ✓"},"contentBlockIndex":0}'.encode()
    assert messages[0].prelude.total_length == len(event("contentBlockDelta", {"delta": {"text": "Hé ✓"},
                                                                                "contentBlockIndex": 0}))


def test_empty_payload_and_a_corrupted_frame() -> None:
    frame = encode_message({":message-type": "event", ":event-type": "ping"}, b"")
    (m,) = list(_decode(frame))
    assert m.payload == b"" and m.headers[":event-type"] == "ping"
    broken = bytearray(frame)
    broken[-6] ^= 0xFF
    with pytest.raises(ChecksumMismatch):
        list(_decode(bytes(broken)))


def _decode(data: bytes) -> EventStreamBuffer:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return buffer
