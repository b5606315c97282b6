"""Incremental Server-Sent Events decoding, shared by every protocol's stream parser.

Upstream bytes arrive in arbitrary pieces: a piece may end in the middle of a line, between the
`\\r` and `\\n` of a line end, or inside a multi-byte UTF-8 character. The decoder keeps raw bytes
until an event is complete (a blank line), so no text is ever decoded from half a character.

Lines that are not SSE fields are kept as `other`: Gemini sends a mid-stream error as plain
(possibly pretty-printed) JSON without a `data:` prefix, and its SDK reads such lines as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class SSEEvent:
    event: str | None = None  # the `event:` field
    data: bytes | None = None  # the `data:` lines joined by "\n"; None when the event had none
    other: list[bytes] = field(default_factory=list)  # lines that are not SSE fields


_FIELDS = (b"id:", b"retry:", b"id", b"retry")


def parse_block(block: bytes) -> SSEEvent | None:
    """One event's lines (`\\n`-separated, no blank line) → the event, or None if it holds nothing."""
    # Fast path: a single `data: ...` line (every OpenAI Chat and Gemini chunk).
    if block.startswith(b"data: ") and b"\n" not in block:
        return SSEEvent(data=block[6:])
    ev = SSEEvent()
    data: list[bytes] | None = None
    for line in block.split(b"\n"):
        if not line or line[:1] == b":":
            continue  # blank, or a comment / keep-alive
        if line.startswith(b"data"):
            if line[4:5] == b":":
                value = line[5:]
                value = value[1:] if value[:1] == b" " else value
            elif len(line) == 4:
                value = b""
            else:
                ev.other.append(line)
                continue
            if data is None:
                data = [value]
            else:
                data.append(value)
        elif line.startswith(b"event:"):
            value = line[6:]
            ev.event = (value[1:] if value[:1] == b" " else value).decode("utf-8", "replace")
        elif line.startswith(_FIELDS):
            continue
        else:
            ev.other.append(line)
    if data is not None:
        ev.data = data[0] if len(data) == 1 else b"\n".join(data)
    if ev.data is None and ev.event is None and not ev.other:
        return None
    return ev


class SSEDecoder:
    """Feed bytes in any split; get back the events they complete."""

    __slots__ = ("_buf", "_cr", "_scan")

    def __init__(self) -> None:
        self._buf = b""
        self._cr = False  # the previous piece ended in "\r": a leading "\n" now belongs to it
        self._scan = 0  # where to resume looking for a separator in _buf

    def feed(self, data: bytes) -> list[SSEEvent]:
        if self._cr:
            self._cr = False
            if data[:1] == b"\n":
                data = data[1:]
        if b"\r" in data:
            # Normalise CRLF and lone CR line ends to LF (the SSE spec allows all three).
            self._cr = data.endswith(b"\r")
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not data:
            return []
        buf = self._buf + data if self._buf else data
        if buf.find(b"\n\n", self._scan) < 0:
            self._buf = buf
            self._scan = max(0, len(buf) - 1)
            return []
        blocks = buf.split(b"\n\n")  # one C-level pass; the last piece is the unfinished event
        rest = blocks.pop()
        self._buf = rest
        self._scan = max(0, len(rest) - 1)
        return [ev for block in blocks if (ev := parse_block(block)) is not None]

    def flush(self) -> list[SSEEvent]:
        """At end of stream: the last event when the stream did not end with a blank line."""
        buf, self._buf, self._scan = self._buf, b"", 0
        ev = parse_block(buf.strip(b"\n")) if buf.strip() else None
        return [ev] if ev is not None else []

    @property
    def pending(self) -> bool:
        """True while bytes of an unfinished event are buffered."""
        return bool(self._buf.strip())


def split_events(data: bytes) -> list[bytes]:
    """A whole SSE body → its events' raw blocks (for tests and replays)."""
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return [b for b in text.split(b"\n\n") if b.strip()]


class SSESplitter:
    """Splits a byte stream into complete SSE events (separator: a blank line, LF or CRLF)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf + data if self._buf else data
        if b"\r" not in buf:  # the usual case: one split, no per-event scanning
            events = buf.split(b"\n\n")
            self._buf = events.pop()
            return events
        events = []
        while True:
            lf, crlf = buf.find(b"\n\n"), buf.find(b"\r\n\r\n")
            if lf < 0 and crlf < 0:
                self._buf = buf
                return events
            if crlf >= 0 and (lf < 0 or crlf < lf):
                events.append(buf[:crlf])
                buf = buf[crlf + 4 :]
            else:
                events.append(buf[:lf])
                buf = buf[lf + 2 :]

    def rest(self) -> bytes:
        rest, self._buf = self._buf.strip(), b""
        return rest
