"""Gemini streams (`:streamGenerateContent?alt=sse`): `data: <GenerateContentResponse>`
chunks, no event names, no terminator. A mid-stream error arrives as plain JSON lines without the
`data: ` prefix. Since nothing marks the end, a stream is complete only when it ENDS (the
gateway calls `end()` at EOF) after a chunk that carried a finishReason, with no error; usage is
the last chunk's usageMetadata.

Function calls carry no id in most Gemini versions, and Gemini 3 needs each call's
`thoughtSignature` back in the next turn. A call's neutral id is therefore `<id>__thought__<sig>`
(litellm's convention), so a client of another protocol returns the signature unknowingly and
the translator restores it.
"""

from __future__ import annotations

import hashlib
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
from gateway.protocols.common import dumps
from gateway.protocols.sse import SSEEvent
from gateway.protocols.stream_base import ParserBase
from gateway.protocols.usage import GEMINI, usage_for

NAME = GEMINI
SIGNATURE_SEPARATOR = "__thought__"
_BLOCKED = "content_filter"
FINISH = {"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": _BLOCKED, "RECITATION": _BLOCKED,
          "BLOCKLIST": _BLOCKED, "PROHIBITED_CONTENT": _BLOCKED, "SPII": _BLOCKED, "IMAGE_SAFETY": _BLOCKED,
          "IMAGE_PROHIBITED_CONTENT": _BLOCKED}
_REVERSE = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP", "content_filter": "SAFETY"}


def finish_of(raw: str | None, has_calls: bool) -> str:
    finish = FINISH.get(raw or "STOP", "stop")
    return "tool_calls" if finish == "stop" and has_calls else finish


def finish_reason_for(finish_reason: str, extra: dict[str, Any]) -> str:
    raw = extra.get("finishReason")
    if raw and finish_of(raw, finish_reason == "tool_calls") == finish_reason:
        return raw
    return _REVERSE.get(finish_reason, "STOP")


def call_id(function_call: dict[str, Any], signature: str | None, response_id: str, index: int) -> str:
    """The neutral id of a Gemini function call: its own id when Gemini gave one, else derived from
    the response id and the call's position (stable, so a stream split anywhere parses the same)."""
    base = function_call.get("id")
    if not base:
        seed = orjson.dumps([response_id, index, function_call.get("name"), function_call.get("args")])
        base = "call_" + hashlib.blake2b(seed, digest_size=12).hexdigest()
    return f"{base}{SIGNATURE_SEPARATOR}{signature}" if signature else base


def split_call_id(neutral_id: str) -> tuple[str, str | None]:
    base, sep, signature = neutral_id.partition(SIGNATURE_SEPARATOR)
    return base, (signature if sep else None)


def function_call_part(call_id_: str, name: str, args: dict[str, Any], native_ids: bool) -> dict[str, Any]:
    base, signature = split_call_id(call_id_)
    fc: dict[str, Any] = {"name": name, "args": args}
    if native_ids and base:
        fc["id"] = base
    part: dict[str, Any] = {"functionCall": fc}
    if signature:
        part["thoughtSignature"] = signature
    return part


class GeminiStreamParser(ParserBase):
    def __init__(self, provider: str = "") -> None:
        super().__init__(provider)
        self._started = False
        self._finish_raw: str | None = None
        self._blocked = False
        self._usage: dict[str, Any] = {}
        self._ended = False
        self._calls = 0
        self._extra: dict[str, Any] = {}

    def _stopped(self) -> bool:
        # Gemini's stream has no terminator: it is finished only at its end, so only an error or
        # the end itself stops parsing.
        return self._error is not None or self._ended

    def end(self) -> list[Event]:
        if self._stopped():
            return []
        out = super().end()
        self._ended = True
        if self._error is None and (self._finish_raw is not None or self._blocked):
            self._finished = True
            finish = _BLOCKED if self._blocked else finish_of(self._finish_raw, self._calls > 0)
            out.append(self._fold([Finish(finish_reason=finish, usage_raw=self._usage)])[0])
        return out

    def answer(self) -> Answer | None:
        if not self._finished or self._error is not None:
            return None
        if self._finish_raw:
            self._extra["finishReason"] = self._finish_raw
        self._builder.extra = {NAME: self._extra}
        return self._builder.answer()

    def _event(self, ev: SSEEvent, out: list[Event]) -> None:
        if ev.data is None:
            if ev.other:
                self._raw(b"\n".join(ev.other))
            return
        try:
            obj = orjson.loads(ev.data)
        except orjson.JSONDecodeError:
            self._error = {"code": 502, "message": "malformed JSON in the upstream stream", "status": "UNAVAILABLE"}
            return
        if not isinstance(obj, dict):
            return
        if obj.get("error"):
            err = obj["error"]
            self._error = err if isinstance(err, dict) else {"message": str(err)}
            return
        if not self._started:
            self._started = True
            out.append(Start(model=obj.get("modelVersion") or ""))
        candidates = obj.get("candidates")
        if candidates:
            cand = candidates[0]
            content = cand.get("content")
            if content:
                self._parts(content.get("parts") or (), out, obj.get("responseId") or "")
            if cand.get("finishReason"):
                self._finish_raw = cand["finishReason"]
        feedback = obj.get("promptFeedback")
        if feedback and feedback.get("blockReason"):
            self._blocked = True
        usage = obj.get("usageMetadata")
        if usage:
            self._usage = usage

    def _parts(self, parts: Any, out: list[Event], response_id: str) -> None:
        for part in parts:
            text = part.get("text")
            if text is not None:
                if part.get("thought"):  # a thought summary: reasoning, not the answer
                    if text:
                        out.append(ReasoningDelta(text))
                    continue
                if text:
                    out.append(TextDelta(text))
                if part.get("thoughtSignature"):
                    self._extra["text_signature"] = part["thoughtSignature"]
                continue
            fc = part.get("functionCall")
            if fc is not None:
                if fc.get("id"):
                    self._extra["native_ids"] = True
                index = self._calls
                self._calls += 1
                cid = call_id(fc, part.get("thoughtSignature"), response_id, index)
                out.append(ToolCallStart(index=index, id=cid, name=fc.get("name") or ""))
                out.append(ToolCallArgs(index=index, delta=orjson.dumps(fc.get("args") or {}).decode()))

    def _raw(self, text: bytes) -> None:
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            return  # not complete JSON yet / not JSON: not an error the SDK would raise either
        if isinstance(obj, list) and obj and isinstance(obj[0], dict):
            obj = obj[0]
        if isinstance(obj, dict) and obj.get("error"):
            err = obj["error"]
            self._error = err if isinstance(err, dict) else {"message": str(err)}


class GeminiStreamRenderer:
    """Neutral events → Gemini `data:` chunks (`\\r\\n\\r\\n` separated, as the API sends them).
    Function calls are sent whole (Gemini never splits one), so their argument deltas are held
    until the call is complete."""

    def __init__(self, request_body: dict[str, Any], response_id: str, model: str,
                 extra: dict[str, Any] | None = None) -> None:
        self._id = response_id
        self._model = model
        self._extra = extra or {}
        self._calls: dict[int, list[Any]] = {}  # index → [id, name, [arg pieces]]

    def _chunk(self, parts: list[dict[str, Any]], finish: str | None = None,
               usage: dict[str, Any] | None = None) -> bytes:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish:
            cand["finishReason"] = finish
        cand["index"] = 0
        obj: dict[str, Any] = {"candidates": [cand]}
        if usage is not None:
            obj["usageMetadata"] = usage
        obj["modelVersion"] = self._model
        obj["responseId"] = self._id
        return b"data: " + dumps(obj) + b"\r\n\r\n"

    def _call_parts(self) -> list[dict[str, Any]]:
        parts = []
        native = bool(self._extra.get("native_ids"))
        for index in sorted(self._calls):
            cid, name, pieces = self._calls[index]
            args = "".join(pieces)
            try:
                value = orjson.loads(args) if args else {}
            except orjson.JSONDecodeError:
                value = {}
            parts.append(function_call_part(cid, name, value if isinstance(value, dict) else {}, native))
        self._calls = {}
        return parts

    def render(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            out = self._chunk(self._call_parts()) if self._calls else b""
            return out + self._chunk([{"text": event.text}])
        if isinstance(event, ToolCallArgs):
            if event.index in self._calls:
                self._calls[event.index][2].append(event.delta)
            return b""
        if isinstance(event, ToolCallStart):
            self._calls[event.index] = [event.id, event.name, []]
            return b""
        if isinstance(event, Start):
            self._model = event.model or self._model
            return b""
        if isinstance(event, Finish):
            parts = self._call_parts()
            if not parts:
                part: dict[str, Any] = {"text": ""}
                if self._extra.get("text_signature"):
                    part["thoughtSignature"] = self._extra["text_signature"]
                parts = [part]
            return self._chunk(parts, finish_reason_for(event.finish_reason, self._extra),
                               usage_for(NAME, event.usage_raw))
        return b""

    def close(self) -> bytes:
        return b""

    def error(self, status: int, message: str, code: str | None = None) -> bytes:
        return dumps(vendor_error_body("gemini", status, message, code)) + b"\n"
