"""AWS event-stream framing (`application/vnd.amazon.eventstream`), as Bedrock's ConverseStream answers.

Decoding uses botocore's own parser (`EventStreamBuffer`: prelude and message CRCs checked, frames split across
reads reassembled). Encoding, for a native boto3 client reading from the gateway, writes the same frames:

    total length (4) | headers length (4) | prelude CRC32 (4) | headers | payload | message CRC32 (4)

with string headers `:event-type`, `:content-type`, `:message-type` (`event`, or `exception` with
`:exception-type` for an in-stream error). The tests read every encoded frame back with botocore.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import orjson
from botocore.eventstream import EventStreamBuffer, ParserError

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7


class EventStreamDecodeError(ValueError):
    """A frame failed its length or CRC checks, or its payload is not JSON."""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    message_type: str  # "event" | "exception" | "error"
    event_type: str  # the union member (`contentBlockDelta`) or the exception type (`throttlingException`)
    payload: dict[str, Any]

    @property
    def is_error(self) -> bool:
        return self.message_type != "event"


class EventStreamDecoder:
    """Feed response bytes as they arrive; get the complete events decoded so far."""

    def __init__(self) -> None:
        self._buffer = EventStreamBuffer()

    def feed(self, data: bytes) -> list[StreamEvent]:
        self._buffer.add_data(data)
        out: list[StreamEvent] = []
        try:
            for message in self._buffer:
                headers = message.headers
                kind = str(headers.get(":message-type", "event"))
                name = str(headers.get(":event-type") or headers.get(":exception-type")
                           or headers.get(":error-code") or "")
                try:
                    payload = orjson.loads(message.payload) if message.payload else {}
                except orjson.JSONDecodeError as e:
                    raise EventStreamDecodeError(f"event {name!r}: payload is not JSON") from e
                if kind == "error" and not payload:
                    payload = {"message": str(headers.get(":error-message", ""))}
                out.append(StreamEvent(kind, name, payload if isinstance(payload, dict) else {"value": payload}))
        except ParserError as e:
            raise EventStreamDecodeError(str(e)) from e
        return out


def _headers(headers: dict[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        n, v = name.encode(), value.encode()
        out += struct.pack(">B", len(n)) + n + struct.pack(">BH", _STRING, len(v)) + v
    return bytes(out)


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    raw = _headers(headers)
    prelude = struct.pack(">II", 16 + len(raw) + len(payload), len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + raw + payload
    return message + struct.pack(">I", zlib.crc32(message))


def encode_event(event_type: str, payload: dict[str, Any]) -> bytes:
    return encode_message({":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
                          orjson.dumps(payload))


def encode_exception(exception_type: str, message: str) -> bytes:
    return encode_message({":exception-type": exception_type, ":content-type": "application/json",
                           ":message-type": "exception"}, orjson.dumps({"message": message}))
