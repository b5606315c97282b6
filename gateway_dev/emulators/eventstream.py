"""AWS event-stream framing (`application/vnd.amazon.eventstream`), the encoder the Bedrock emulator streams with.

Wire format of one message (all integers big-endian):

    total length (4) | headers length (4) | CRC32 of the previous 8 bytes (4)
    headers: name length (1) | name | value type (1) | value (strings: length (2) | UTF-8 bytes)
    payload
    CRC32 of everything before it (4)

No maintained Python package encodes it (botocore only decodes; awscrt keeps its codec inside its RPC client), so
these few lines write it and the tests read every frame back with botocore's own `EventStreamBuffer`.
"""

from __future__ import annotations

import struct
import zlib

import orjson

_STRING = 7  # header value type "string"


def encode_headers(headers: dict[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        n, v = name.encode(), value.encode()
        out += struct.pack(">B", len(n)) + n + struct.pack(">BH", _STRING, len(v)) + v
    return bytes(out)


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    raw_headers = encode_headers(headers)
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def event(event_type: str, payload: object) -> bytes:
    """One `:message-type: event` frame with a JSON payload (a member of the operation's event union)."""
    return encode_message({":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
                          orjson.dumps(payload))


def exception(exception_type: str, message: str) -> bytes:
    """An in-stream modeled error (`:message-type: exception`), which botocore raises as EventStreamError."""
    return encode_message({":exception-type": exception_type, ":content-type": "application/json",
                           ":message-type": "exception"}, orjson.dumps({"message": message}))
