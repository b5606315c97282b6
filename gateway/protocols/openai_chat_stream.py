"""OpenAI Chat Completions streams: the parser (upstream bytes → neutral events), the renderer
(neutral events → `data:` chunks + `data: [DONE]`) and the filter that hides the usage chunk the
gateway asked for on the client's behalf.

Wire format: each chunk is `data: <chat.completion.chunk>`; the stream ends with
`data: [DONE]`. With `stream_options.include_usage` an extra chunk with `"choices": []` and the
usage arrives just before `[DONE]`, and every other chunk carries `"usage": null`.
"""

from __future__ import annotations

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
from gateway.protocols.common import dumps, now, with_prefix
from gateway.protocols.sse import SSEEvent
from gateway.protocols.stream_base import ParserBase
from gateway.protocols.usage import OPENAI_CHAT, usage_for

NAME = OPENAI_CHAT

# OpenAI's words are the neutral vocabulary; only the legacy "function_call" needs mapping.
FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "content_filter": "content_filter",
          "function_call": "tool_calls"}


class ChatStreamParser(ParserBase):
    """Incremental parser of a Chat Completions stream (only choice 0 is folded into the answer)."""

    def __init__(self, provider: str = "") -> None:
        super().__init__(provider)
        self._started = False
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._done = False  # [DONE] seen
        self._tools: set[int] = set()
        self._extra: dict[str, Any] = {}
        self._refusal: list[str] = []

    def answer(self) -> Answer | None:
        if not self._finished or self._error is not None:
            return None
        extra = dict(self._extra)
        if self._refusal:
            extra["refusal"] = "".join(self._refusal)
        if extra:
            self._builder.extra = {NAME: extra}
        return self._builder.answer()

    def _event(self, ev: SSEEvent, out: list[Event]) -> None:
        d = ev.data
        if d is None:
            if ev.other:  # a bare JSON error body (some OpenAI-compatible servers)
                self._bare(b"\n".join(ev.other))
            return
        if d[:6] == b"[DONE]":
            self._done = True
            if self._finish is not None:
                self._emit(out)
            return
        try:
            obj = orjson.loads(d)
        except orjson.JSONDecodeError:
            self._error = {"message": "malformed JSON in the upstream stream", "type": "invalid_stream"}
            return
        if not isinstance(obj, dict):
            return
        err = obj.get("error")
        if err:
            self._error = err if isinstance(err, dict) else {"message": str(err)}
            return
        if not self._started and (obj.get("model") or obj.get("choices")):
            # Azure opens with a prompt-annotation chunk (`model: ""`, `choices: []`): the stream starts at
            # the first chunk that names the model or carries a choice.
            self._started = True
            out.append(Start(model=obj.get("model") or ""))
            self._meta(obj)  # the same on every chunk: read on the first and the last only
        choices = obj.get("choices")
        if choices:
            for ch in choices:
                if ch.get("index", 0) == 0:
                    self._choice(ch, out)
        usage = obj.get("usage")
        if usage:
            self._usage = usage
            self._meta(obj)
            if not choices and self._finish is not None:
                self._emit(out)

    def _meta(self, obj: dict[str, Any]) -> None:
        for key in ("system_fingerprint", "service_tier"):
            value = obj.get(key)
            if value:
                self._extra[key] = value

    def _choice(self, ch: dict[str, Any], out: list[Event]) -> None:
        delta = ch.get("delta")
        if delta:
            content = delta.get("content")
            if content:
                out.append(TextDelta(content))
            calls = delta.get("tool_calls")
            if calls:
                for tc in calls:
                    self._tool(tc.get("index", 0), tc.get("id"), tc.get("function") or {}, out)
            legacy = delta.get("function_call")
            if legacy:
                self._tool(0, None, legacy, out)
            refusal = delta.get("refusal")
            if refusal:
                self._refusal.append(refusal)
            reasoning = delta.get("reasoning_content")
            if reasoning:
                out.append(ReasoningDelta(reasoning))
        finish = ch.get("finish_reason")
        if finish:
            self._finish = FINISH.get(finish, finish)

    def _tool(self, index: int, call_id: str | None, fn: dict[str, Any], out: list[Event]) -> None:
        if index not in self._tools:
            self._tools.add(index)
            out.append(ToolCallStart(index=index, id=call_id or "", name=fn.get("name") or ""))
        args = fn.get("arguments")
        if args:
            out.append(ToolCallArgs(index=index, delta=args))

    def _emit(self, out: list[Event]) -> None:
        if not self._finished:
            self._finished = True
            out.append(Finish(finish_reason=self._finish or "stop", usage_raw=self._usage or {}))

    def _bare(self, text: bytes) -> None:
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            return
        if isinstance(obj, dict) and obj.get("error"):
            err = obj["error"]
            self._error = err if isinstance(err, dict) else {"message": str(err)}


class ChatStreamRenderer:
    """Neutral events → `chat.completion.chunk` SSE bytes (the chunk head is serialised once)."""

    def __init__(self, request_body: dict[str, Any], response_id: str, include_usage: bool,
                 extra: dict[str, Any] | None = None) -> None:
        self._id = with_prefix("chatcmpl-", response_id)
        self._created = now()
        self._model = request_body.get("model") or ""
        self._include_usage = include_usage
        self._extra = extra or {}
        self._prefix = b""
        self._head = b""
        null_usage = b',"usage":null' if include_usage else b""
        self._tail = b',"logprobs":null,"finish_reason":null}]' + null_usage + b"}\n\n"

    def _init(self, model: str) -> None:
        head: dict[str, Any] = {"id": self._id, "object": "chat.completion.chunk", "created": self._created,
                                "model": model or self._model}
        for key in ("service_tier", "system_fingerprint"):
            if self._extra.get(key):
                head[key] = self._extra[key]
        self._head = b"data: " + dumps(head)[:-1]
        self._prefix = self._head + b',"choices":[{"index":0,"delta":'

    def _chunk(self, delta: bytes) -> bytes:
        return self._prefix + delta + self._tail

    def render(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            if not self._prefix:
                self._init("")
            return self._chunk(b'{"content":' + dumps(event.text) + b"}")
        if isinstance(event, ReasoningDelta):
            if not self._prefix:
                self._init("")
            return self._chunk(b'{"reasoning_content":' + dumps(event.text) + b"}")
        if isinstance(event, Start):
            self._init(event.model)
            out = self._chunk(b'{"role":"assistant","content":"","refusal":null}')
            if self._extra.get("reasoning_content"):
                out += self._chunk(dumps({"reasoning_content": self._extra["reasoning_content"]}))
            return out
        if not self._prefix:
            self._init("")
        if isinstance(event, ToolCallArgs):
            return self._chunk(dumps({"tool_calls": [{"index": event.index, "function": {"arguments": event.delta}}]}))
        if isinstance(event, ToolCallStart):
            call = {"index": event.index, "id": event.id, "type": "function",
                    "function": {"name": event.name, "arguments": ""}}
            return self._chunk(dumps({"tool_calls": [call]}))
        if isinstance(event, Finish):
            out = b""
            if self._extra.get("refusal"):
                out += self._chunk(dumps({"refusal": self._extra["refusal"]}))
            out += (self._prefix + b'{},"logprobs":null,"finish_reason":' + dumps(event.finish_reason) + b"}]"
                    + (b',"usage":null' if self._include_usage else b"") + b"}\n\n")
            if self._include_usage:
                out += self._head + b',"choices":[],"usage":' + dumps(usage_for(NAME, event.usage_raw)) + b"}\n\n"
            return out
        return b""

    def close(self) -> bytes:
        return b"data: [DONE]\n\n"

    def error(self, status: int, message: str, code: str | None = None) -> bytes:
        return b"data: " + dumps(vendor_error_body("openai", status, message, code)) + b"\n\n"


class UsageChunkFilter:
    """Restores a stream to what the client asked for when the gateway added
    `stream_options.include_usage` upstream: drops the usage-only chunk and removes the
    `"usage":null` key from the other chunks. Works on the bytes with a single search per event
    (a JSON key with bare quotes cannot occur inside a JSON string), parsing only the usage chunk
    and chunks written with spaces after the separators."""

    def __call__(self, event: bytes) -> bytes | None:
        i = event.find(b'"usage":')
        if i < 0:
            return self._slow(event) if b'"usage"' in event else event
        j = i + 8
        if event.startswith(b"null", j):
            if event[i - 1:i] == b",":
                return event[:i - 1] + event[j + 4:]
            if event[j + 4:j + 5] == b",":
                return event[:i] + event[j + 5:]
        return self._slow(event)

    @staticmethod
    def _slow(event: bytes) -> bytes | None:
        obj = _payload(event)
        if not isinstance(obj, dict) or "usage" not in obj:
            return event
        if obj["usage"] is None:
            del obj["usage"]
            return b"data: " + dumps(obj)
        if not obj.get("choices"):
            return None  # the usage-only chunk the client did not ask for
        return event


def _payload(event: bytes) -> Any:
    at = event.find(b"data:")
    if at < 0:
        return None
    data = event[at + 5:].lstrip(b" ")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
