"""Anthropic Messages streams: every event has an `event:` line; message_start →
(content_block_start → content_block_delta* → content_block_stop)* → message_delta → message_stop;
`ping` anywhere; `event: error` mid-stream.

Usage is accumulated like the SDK does: start from message_start's usage, then let message_delta's
cumulative counts overwrite, each only when present (so cache_creation/cache_read from
message_start survive a message_delta that omits them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from gateway.answer import (
    Answer,
    Event,
    Finish,
    ReasoningDelta,
    Start,
    TextDelta,
    ToolCallArgs,
    ToolCallStart,
)
from gateway.errors import vendor_error_body
from gateway.protocols.common import dumps, with_prefix
from gateway.protocols.sse import SSEEvent
from gateway.protocols.stream_base import ParserBase
from gateway.protocols.usage import ANTHROPIC, usage_for

NAME = ANTHROPIC
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
          "model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter"}
_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}
_DELTA_USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use",
                "output_tokens_details")


def stop_reason_for(finish_reason: str, extra: dict[str, Any]) -> str:
    """The Anthropic stop_reason for a neutral finish (the original one when the answer came from
    Anthropic and maps to the same neutral word, e.g. stop_sequence or pause_turn)."""
    raw = extra.get("stop_reason")
    if raw and FINISH.get(raw) == finish_reason:
        return raw
    return _STOP.get(finish_reason, "end_turn")


class AnthropicStreamParser(ParserBase):
    def __init__(self, provider: str = "") -> None:
        super().__init__(provider)
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None
        self._stop_sequence: str | None = None
        self._tools: dict[int, int] = {}  # block index → neutral tool index
        self._blocks: dict[int, dict[str, Any]] = {}  # block index → block as it builds up
        self._pieces: dict[int, list[str]] = {}  # block index → text / json / thinking pieces
        self._plain = True  # only text and tool_use blocks so far
        self._vendor: dict[str, Any] = {}  # message id and cache diagnostics, from message_start

    def answer(self) -> Answer | None:
        if not self._finished or self._error is not None:
            return None
        extra: dict[str, Any] = {"stop_reason": self._stop_reason or "end_turn"}
        if self._stop_sequence is not None:
            extra["stop_sequence"] = self._stop_sequence
        if not self._plain:
            extra["content"] = [self._block(i) for i in sorted(self._blocks)]
        extra.update(self._vendor)
        self._builder.extra = {NAME: extra}
        return self._builder.answer()

    def _block(self, index: int) -> dict[str, Any]:
        block = dict(self._blocks[index])
        text = "".join(self._pieces.get(index, ()))
        kind = block.get("type")
        if kind == "text":
            block["text"] = block.get("text", "") + text
        elif kind == "thinking":
            block["thinking"] = block.get("thinking", "") + text
        elif text and kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            try:
                block["input"] = orjson.loads(text)
            except orjson.JSONDecodeError:
                block["input"] = {}
        return block

    def _event(self, ev: SSEEvent, out: list[Event]) -> None:
        kind = ev.event
        if kind == "ping" or ev.data is None:
            return
        try:
            obj = orjson.loads(ev.data)
        except orjson.JSONDecodeError:
            self._error = {"type": "invalid_stream", "message": "malformed JSON in the upstream stream"}
            return
        if not isinstance(obj, dict):
            return
        kind = kind or obj.get("type")
        if kind == "content_block_delta":
            index = obj.get("index", 0)
            delta = obj.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                text = delta.get("text") or ""
                self._pieces.setdefault(index, []).append(text)
                if text:
                    out.append(TextDelta(text))
            elif dtype == "input_json_delta":
                part = delta.get("partial_json") or ""
                self._pieces.setdefault(index, []).append(part)
                tool = self._tools.get(index)
                if tool is not None and part:
                    out.append(ToolCallArgs(index=tool, delta=part))
            elif dtype == "thinking_delta":
                thinking = delta.get("thinking") or ""
                self._pieces.setdefault(index, []).append(thinking)
                if thinking:
                    out.append(ReasoningDelta(thinking))
            elif dtype == "signature_delta":
                self._blocks.setdefault(index, {"type": "thinking"})["signature"] = delta.get("signature")
            elif dtype == "citations_delta":
                self._plain = False
                self._blocks.setdefault(index, {"type": "text"}).setdefault("citations", []).append(
                    delta.get("citation"))
        elif kind == "content_block_start":
            index = obj.get("index", 0)
            block = dict(obj.get("content_block") or {})
            self._blocks[index] = block
            btype = block.get("type")
            if btype == "tool_use":
                tool = len(self._tools)
                self._tools[index] = tool
                out.append(ToolCallStart(index=tool, id=block.get("id") or "", name=block.get("name") or ""))
                if block.get("input"):  # normally {} with the input streamed as json deltas
                    text = orjson.dumps(block["input"]).decode()
                    self._pieces.setdefault(index, []).append(text)
                    out.append(ToolCallArgs(index=tool, delta=text))
                block["input"] = {}
            elif btype == "text":
                if block.get("text"):
                    out.append(TextDelta(block["text"]))
                if block.get("citations"):
                    self._plain = False
            else:
                self._plain = False
        elif kind == "message_start":
            msg = obj.get("message") or {}
            self._usage = dict(msg.get("usage") or {})
            self._vendor = {k: v for k, v in (("vendor_message_id", msg.get("id")),
                                              ("cache_diagnostics", msg.get("diagnostics"))) if v}
            out.append(Start(model=msg.get("model") or ""))
        elif kind == "message_delta":
            delta = obj.get("delta") or {}
            self._stop_reason = delta.get("stop_reason") or self._stop_reason
            self._stop_sequence = delta.get("stop_sequence")
            usage = obj.get("usage") or {}
            if usage.get("output_tokens") is not None:
                self._usage["output_tokens"] = usage["output_tokens"]
            for key in _DELTA_USAGE:
                if usage.get(key) is not None:
                    self._usage[key] = usage[key]
        elif kind == "message_stop":
            self._finished = True
            out.append(Finish(finish_reason=FINISH.get(self._stop_reason or "end_turn", "stop"),
                              usage_raw=self._usage))
        elif kind == "error":
            err = obj.get("error")
            self._error = err if isinstance(err, dict) else {"type": "api_error", "message": str(obj)}


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + dumps(payload) + b"\n\n"


def tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class AnthropicStreamRenderer:
    """Neutral events → Anthropic SSE. Given the whole answer (a replay), message_start carries the
    prompt-side usage as the live API sends it; message_delta always carries the cumulative usage."""

    def __init__(self, request_body: dict[str, Any], response_id: str, answer: Answer | None = None) -> None:
        self._id = with_prefix("msg_", response_id)
        self._model = request_body.get("model") or ""
        self._extra: dict[str, Any] = (answer.extra.get(NAME) or {}) if answer is not None else {}
        self._usage = usage_for(NAME, answer.usage_raw) if answer is not None else None
        self._index = -1  # the open block's index
        self._open: str | None = None  # the open block's type
        self._tool_blocks: dict[int, int] = {}  # neutral tool index → block index
        self._pinged = False
        self._started = False

    def _message_start(self, model: str) -> bytes:
        self._started = True
        usage: dict[str, Any] = {"input_tokens": 0, "cache_creation_input_tokens": 0,
                                 "cache_read_input_tokens": 0, "output_tokens": 0}
        if self._usage:
            usage.update({k: v for k, v in self._usage.items() if k != "output_tokens"})
            usage["output_tokens"] = min(1, self._usage.get("output_tokens") or 0)
        message: dict[str, Any] = {"id": self._id, "type": "message", "role": "assistant", "content": [],
                   "model": model or self._model, "stop_reason": None, "stop_sequence": None, "usage": usage}
        return _event("message_start", {"type": "message_start", "message": message})

    def _start_block(self, block: dict[str, Any]) -> bytes:
        out = self._stop_block()
        self._index += 1
        self._open = block["type"]
        out += _event("content_block_start", {"type": "content_block_start", "index": self._index,
                                              "content_block": block})
        if not self._pinged:
            self._pinged = True
            out += _event("ping", {"type": "ping"})
        return out

    def _stop_block(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return _event("content_block_stop", {"type": "content_block_stop", "index": self._index})

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        return _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})

    def render(self, event: Event) -> bytes:
        out = b"" if self._started or isinstance(event, Start) else self._message_start("")
        if isinstance(event, TextDelta):
            if self._open != "text":
                out += self._start_block({"type": "text", "text": ""})
            return out + self._delta(self._index, {"type": "text_delta", "text": event.text})
        if isinstance(event, ToolCallArgs):
            block = self._tool_blocks.get(event.index)
            if block is None:
                return out
            return out + self._delta(block, {"type": "input_json_delta", "partial_json": event.delta})
        if isinstance(event, ToolCallStart):
            out += self._start_block({"type": "tool_use", "id": event.id, "name": event.name, "input": {}})
            self._tool_blocks[event.index] = self._index
            return out
        if isinstance(event, Start):
            return self._message_start(event.model)
        if isinstance(event, Finish):
            return out + self._stop_block() + self._finish(event.finish_reason, event.usage_raw)
        return out

    def _finish(self, finish_reason: str, usage_raw: dict[str, Any]) -> bytes:
        usage = usage_for(NAME, usage_raw)
        delta_usage = {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                             "cache_read_input_tokens", "output_tokens") if k in usage}
        delta = {"stop_reason": stop_reason_for(finish_reason, self._extra),
                 "stop_sequence": self._extra.get("stop_sequence")}
        return (_event("message_delta", {"type": "message_delta", "delta": delta, "usage": delta_usage})
                + _event("message_stop", {"type": "message_stop"}))

    def replay_blocks(self, answer: Answer, content: list[dict[str, Any]], chunk_chars: int) -> Iterator[bytes]:
        """Replays stored content blocks of every kind (thinking with its signature, citations,
        server tool blocks) as the live API streams them."""
        yield self._message_start(answer.model)
        step = chunk_chars if chunk_chars > 0 else 1 << 30
        for block in content:
            kind = block.get("type")
            if kind == "text":
                start = {k: v for k, v in block.items() if k not in ("text", "citations")}
                out = self._start_block({**start, "text": ""})
                for citation in block.get("citations") or []:
                    out += self._delta(self._index, {"type": "citations_delta", "citation": citation})
                text = block.get("text") or ""
                for i in range(0, len(text), step):
                    out += self._delta(self._index, {"type": "text_delta", "text": text[i:i + step]})
            elif kind == "thinking":
                out = self._start_block({"type": "thinking", "thinking": "", "signature": ""})
                thinking = block.get("thinking") or ""
                for i in range(0, len(thinking), step):
                    out += self._delta(self._index, {"type": "thinking_delta", "thinking": thinking[i:i + step]})
                if block.get("signature"):
                    out += self._delta(self._index, {"type": "signature_delta", "signature": block["signature"]})
            elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
                out = self._start_block({**block, "input": {}})
                if block.get("input"):
                    out += self._delta(self._index, {"type": "input_json_delta",
                                                     "partial_json": orjson.dumps(block["input"]).decode()})
            else:  # redacted thinking, tool results of server tools: sent whole in content_block_start
                out = self._start_block(block)
            yield out
        yield self._stop_block() + self._finish(answer.finish_reason, answer.usage_raw)

    def close(self) -> bytes:
        return b""  # message_stop ends the stream

    def error(self, status: int, message: str, code: str | None = None) -> bytes:
        return _event("error", vendor_error_body("anthropic", status, message, code))

