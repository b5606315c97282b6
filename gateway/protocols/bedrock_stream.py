"""Bedrock ConverseStream: AWS event-stream frames (`application/vnd.amazon.eventstream`), not SSE.

    messageStart → (contentBlockStart (tool use) → contentBlockDelta* → contentBlockStop)* → messageStop
    → metadata {usage, metrics}

Parsing uses `eventstream.EventStreamDecoder` (botocore's frame parser, CRCs checked); an `exception` frame
(`throttlingException`, `internalServerException`, ...) is a mid-stream error. The usage arrives only in
`metadata`, after `messageStop`, so the neutral `Finish` is emitted there (or at the end of a stream that
stopped without it). Rendering writes the same frames with `eventstream.encode_event`.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.answer import (
    Answer,
    AnswerBuilder,
    Event,
    Finish,
    ReasoningDelta,
    Start,
    TextDelta,
    ToolCallArgs,
    ToolCallStart,
)
from gateway.protocols.eventstream import EventStreamDecodeError, EventStreamDecoder, encode_event, encode_exception
from gateway.protocols.usage import BEDROCK, usage_for

NAME = BEDROCK
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
          "guardrail_intervened": "content_filter", "content_filtered": "content_filter",
          "model_context_window_exceeded": "length"}
_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "content_filtered"}
# HTTP status → the exception type Bedrock streams for it (botocore's ConverseStreamOutput members)
_EXCEPTIONS = {400: "validationException", 408: "modelTimeoutException", 424: "modelStreamErrorException",
               429: "throttlingException", 503: "serviceUnavailableException"}


def stop_reason_for(finish_reason: str, extra: dict[str, Any]) -> str:
    raw = extra.get("stop_reason")
    if raw and FINISH.get(raw) == finish_reason:
        return raw
    return _STOP.get(finish_reason, "end_turn")


class ConverseStreamParser:
    def __init__(self, provider: str = "") -> None:
        self._decoder = EventStreamDecoder()
        self._builder = AnswerBuilder(provider)
        self._error: dict[str, Any] | None = None
        self._finished = False
        self._stop: str | None = None
        self._tools: dict[int, int] = {}  # content block index → neutral tool index
        self._started = False

    @property
    def error(self) -> dict[str, Any] | None:
        return self._error

    @property
    def finished(self) -> bool:
        return self._finished

    def _finish(self, usage: dict[str, Any], out: list[Event]) -> None:
        self._finished = True
        raw = self._stop or "end_turn"
        self._builder.extra[NAME] = {"stop_reason": raw}
        out.append(Finish(FINISH.get(raw, "stop"), usage))

    def feed(self, data: bytes) -> list[Event]:
        if self._finished or self._error is not None:
            return []
        try:
            frames = self._decoder.feed(data)
        except EventStreamDecodeError as e:
            self._error = {"type": "stream_decode_error", "message": str(e)}
            return []
        out: list[Event] = []
        for frame in frames:
            if frame.is_error:
                self._error = {"type": frame.event_type, "message": str(frame.payload.get("message", ""))}
                break
            self._frame(frame.event_type, frame.payload, out)
            if self._finished:
                break
        for event in out:
            self._builder.add(event)
        return out

    def _frame(self, name: str, p: dict[str, Any], out: list[Event]) -> None:
        if not self._started and name in ("messageStart", "contentBlockStart", "contentBlockDelta"):
            self._started = True
            out.append(Start(model=""))
        raw_index = p.get("contentBlockIndex")
        index: int = raw_index if isinstance(raw_index, int) else 0
        if name == "contentBlockStart":
            tool = (p.get("start") or {}).get("toolUse")
            if isinstance(tool, dict):
                n = self._tools.setdefault(index, len(self._tools))
                out.append(ToolCallStart(n, str(tool.get("toolUseId") or ""), str(tool.get("name") or "")))
        elif name == "contentBlockDelta":
            delta = p.get("delta") or {}
            if isinstance(delta.get("text"), str):
                out.append(TextDelta(delta["text"]))
            elif isinstance(delta.get("toolUse"), dict) and index in self._tools:
                out.append(ToolCallArgs(self._tools[index], str(delta["toolUse"].get("input") or "")))
            elif isinstance(delta.get("reasoningContent"), dict) and "text" in delta["reasoningContent"]:
                out.append(ReasoningDelta(str(delta["reasoningContent"]["text"])))
        elif name == "messageStop":
            self._stop = str(p.get("stopReason") or "end_turn")
        elif name == "metadata":
            usage = p.get("usage")
            self._finish(usage if isinstance(usage, dict) else {}, out)

    def end(self) -> list[Event]:
        if self._finished or self._error is not None or self._stop is None:
            return []
        out: list[Event] = []
        self._finish({}, out)  # messageStop without metadata: complete, but with no usage to meter
        for e in out:
            self._builder.add(e)
        return out

    def answer(self) -> Answer | None:
        return None if self._error is not None else self._builder.answer()


class ConverseStreamRenderer:
    """Neutral events → ConverseStream frames, as boto3's EventStream reads them."""

    def __init__(self, answer: Answer | None = None) -> None:
        self._extra: dict[str, Any] = (answer.extra.get(NAME) or {}) if answer is not None else {}
        self._started = False
        self._index = -1
        self._open: str | None = None
        self._tool_blocks: dict[int, int] = {}

    def _start(self) -> bytes:
        self._started = True
        return encode_event("messageStart", {"role": "assistant"})

    def _stop_block(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return encode_event("contentBlockStop", {"contentBlockIndex": self._index})

    def render(self, event: Event) -> bytes:
        if isinstance(event, Start):
            return b"" if self._started else self._start()
        out = b"" if self._started else self._start()
        if isinstance(event, TextDelta):
            if self._open != "text":
                out += self._stop_block()
                self._index += 1
                self._open = "text"
            return out + encode_event("contentBlockDelta", {"delta": {"text": event.text},
                                                            "contentBlockIndex": self._index})
        if isinstance(event, ReasoningDelta):
            if self._open != "reasoning":
                out += self._stop_block()
                self._index += 1
                self._open = "reasoning"
            return out + encode_event("contentBlockDelta", {"delta": {"reasoningContent": {"text": event.text}},
                                                            "contentBlockIndex": self._index})
        if isinstance(event, ToolCallStart):
            out += self._stop_block()
            self._index += 1
            self._open = "tool"
            self._tool_blocks[event.index] = self._index
            return out + encode_event("contentBlockStart", {"start": {"toolUse": {"toolUseId": event.id,
                                                                                  "name": event.name}},
                                                            "contentBlockIndex": self._index})
        if isinstance(event, ToolCallArgs):
            block = self._tool_blocks.get(event.index)
            if block is None:
                return out
            return out + encode_event("contentBlockDelta", {"delta": {"toolUse": {"input": event.delta}},
                                                            "contentBlockIndex": block})
        if isinstance(event, Finish):
            out += self._stop_block()
            out += encode_event("messageStop", {"stopReason": stop_reason_for(event.finish_reason, self._extra)})
            return out + encode_event("metadata", {"usage": usage_for(NAME, event.usage_raw),
                                                   "metrics": {"latencyMs": 0}})
        return out

    def close(self) -> bytes:
        return b""  # metadata ends the stream

    def error(self, status: int, message: str, code: str | None = None) -> bytes:
        kind = _EXCEPTIONS.get(status, "internalServerException" if status >= 500 else "validationException")
        return encode_exception(kind, message)


def tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
