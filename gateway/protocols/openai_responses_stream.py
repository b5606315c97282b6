"""OpenAI Responses streams: `event: <type>` + `data: <json>` pairs, each payload with a
monotonically increasing `sequence_number`; no `[DONE]`; usage only in the terminal event
(`response.completed`, or `response.incomplete` when max_output_tokens cut the answer).

The parser decodes only the events it needs: `response.created` (model), output items and deltas,
and the terminal event. The rest (in_progress, *.done, content_part.*) is skipped undecoded.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.answer import (
    Answer,
    Event,
    Finish,
    Start,
    TextDelta,
    ToolCallArgs,
    ToolCallStart,
)
from gateway.errors import vendor_error_body
from gateway.protocols.common import dumps, now, with_prefix
from gateway.protocols.openai_responses_objects import (
    call_item,
    finish_of,
    message_item,
    response_object,
    status_of,
)
from gateway.protocols.sse import SSEEvent
from gateway.protocols.stream_base import ParserBase
from gateway.protocols.usage import OPENAI_RESPONSES, usage_for

NAME = OPENAI_RESPONSES
_NEEDED = frozenset({
    "response.created", "response.output_item.added", "response.output_text.delta",
    "response.function_call_arguments.delta", "response.refusal.delta", "response.completed",
    "response.incomplete", "response.failed", "error",
})


class ResponsesStreamParser(ParserBase):
    def __init__(self, provider: str = "") -> None:
        super().__init__(provider)
        self._started = False
        self._calls: dict[int, int] = {}  # output_index → neutral tool index
        self._extra: dict[str, Any] = {}
        self._refusal: list[str] = []

    def answer(self) -> Answer | None:
        if not self._finished or self._error is not None:
            return None
        if self._refusal:
            self._extra["refusal"] = "".join(self._refusal)
        if self._extra:
            self._builder.extra = {NAME: self._extra}
        return self._builder.answer()

    def _event(self, ev: SSEEvent, out: list[Event]) -> None:
        if ev.data is None or (ev.event is not None and ev.event not in _NEEDED):
            return
        try:
            obj = orjson.loads(ev.data)
        except orjson.JSONDecodeError:
            if ev.data.strip() != b"[DONE]":
                self._error = {"message": "malformed JSON in the upstream stream", "type": "invalid_stream"}
            return
        if not isinstance(obj, dict):
            return
        kind = obj.get("type") or ev.event
        if kind == "response.output_text.delta":
            delta = obj.get("delta")
            if delta:
                out.append(TextDelta(delta))
        elif kind == "response.function_call_arguments.delta":
            index = self._calls.get(obj.get("output_index", -1))
            if index is not None and obj.get("delta"):
                out.append(ToolCallArgs(index=index, delta=obj["delta"]))
        elif kind == "response.output_item.added":
            item = obj.get("item") or {}
            if item.get("type") == "function_call":
                index = len(self._calls)
                self._calls[obj.get("output_index", index)] = index
                out.append(ToolCallStart(index=index, id=item.get("call_id") or "", name=item.get("name") or ""))
                if item.get("arguments"):
                    out.append(ToolCallArgs(index=index, delta=item["arguments"]))
        elif kind == "response.created":
            if not self._started:
                self._started = True
                out.append(Start(model=(obj.get("response") or {}).get("model") or ""))
        elif kind == "response.refusal.delta":
            self._refusal.append(obj.get("delta") or "")
        elif kind in ("response.completed", "response.incomplete"):
            resp = obj.get("response") or {}
            if not self._started:
                self._started = True
                out.append(Start(model=resp.get("model") or ""))
            if resp.get("service_tier"):
                self._extra["service_tier"] = resp["service_tier"]
            if isinstance(resp.get("id"), str) and resp["id"].startswith("resp_") and resp.get("store") is not False:
                self._extra["id"] = resp["id"]  # see openai_responses.stored_id
            if isinstance(resp.get("prompt_cache_diagnostics"), dict):
                self._extra["prompt_cache_diagnostics"] = resp["prompt_cache_diagnostics"]
            self._finished = True
            finish = finish_of(resp.get("status"), resp.get("incomplete_details"), bool(self._calls))
            out.append(Finish(finish_reason=finish, usage_raw=resp.get("usage") or {}))
        elif kind == "response.failed":
            err = (obj.get("response") or {}).get("error")
            self._error = err if isinstance(err, dict) else {"message": "response failed", "type": "failed"}
        elif kind == "error":
            self._error = {k: obj.get(k) for k in ("message", "code", "param", "type") if obj.get(k) is not None}
            if isinstance(obj.get("error"), dict):
                self._error = obj["error"]


class ResponsesStreamRenderer:
    """Neutral events → the Responses event sequence: created → in_progress → per item
    (output_item.added → content_part.added → output_text.delta* → output_text.done →
    content_part.done → output_item.done, or the function_call item with its argument deltas)
    → completed (or incomplete)."""

    def __init__(self, request_body: dict[str, Any], response_id: str, include_usage: bool,
                 extra: dict[str, Any] | None = None) -> None:
        self._req = request_body
        self._id = (extra or {}).get("id") or with_prefix("resp_", response_id)
        self._base = self._id[len("resp_"):]
        self._created = now()
        self._model = request_body.get("model") or ""
        self._extra = extra or {}
        self._seq = 0
        self._started = False
        self._output: list[dict[str, Any]] = []  # finished items, in output order
        self._msg: dict[str, Any] | None = None  # the open message item
        self._msg_text: list[str] = []
        self._call: dict[str, Any] | None = None  # the open function_call item
        self._call_args: list[str] = []
        self._call_items: dict[int, dict[str, Any]] = {}  # neutral tool index → its item

    def _ev(self, kind: str, payload: dict[str, Any]) -> bytes:
        body = {"type": kind, **payload, "sequence_number": self._seq}
        self._seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + dumps(body) + b"\n\n"

    def _response(self, status: str, usage: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        return response_object(self._req, self._id, self._created, self._model, status, list(self._output),
                               usage, finish, self._extra)

    def _start(self, model: str = "") -> bytes:
        self._started = True
        self._model = model or self._model
        response = self._response("in_progress", None)
        return (self._ev("response.created", {"response": response})
                + self._ev("response.in_progress", {"response": response}))

    def _open_message(self) -> bytes:
        index = len(self._output)
        self._msg = {"id": f"msg_{self._base}", "index": index}
        self._msg_text = []
        item = {"id": self._msg["id"], "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        return (self._ev("response.output_item.added", {"output_index": index, "item": item})
                + self._ev("response.content_part.added", {"item_id": item["id"], "output_index": index,
                                                           "content_index": 0, "part": part}))

    def _close_message(self, refusal: str | None = None) -> bytes:
        msg, self._msg = self._msg, None
        if msg is None:
            return b""
        text = "".join(self._msg_text)
        ids = {"item_id": msg["id"], "output_index": msg["index"]}
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        out = (self._ev("response.output_text.done", {**ids, "content_index": 0, "text": text, "logprobs": []})
               + self._ev("response.content_part.done", {**ids, "content_index": 0, "part": part}))
        if refusal:
            rpart = {"type": "refusal", "refusal": ""}
            out += (self._ev("response.content_part.added", {**ids, "content_index": 1, "part": rpart})
                    + self._ev("response.refusal.delta", {**ids, "content_index": 1, "delta": refusal})
                    + self._ev("response.refusal.done", {**ids, "content_index": 1, "refusal": refusal})
                    + self._ev("response.content_part.done", {**ids, "content_index": 1,
                                                              "part": {"type": "refusal", "refusal": refusal}}))
        item = message_item(msg["id"], text, refusal)
        if refusal and not text:
            item["content"].insert(0, part)  # the output_text part was streamed, keep it
        self._output.append(item)
        return out + self._ev("response.output_item.done", {"output_index": msg["index"], "item": item})

    def _close_call(self) -> bytes:
        call, self._call = self._call, None
        if call is None:
            return b""
        args = "".join(self._call_args)
        item = call_item(call["id"], call["call_id"], call["name"], args)
        self._output.append(item)
        return (self._ev("response.function_call_arguments.done",
                         {"item_id": call["id"], "output_index": call["index"], "arguments": args})
                + self._ev("response.output_item.done", {"output_index": call["index"], "item": item}))

    def render(self, event: Event) -> bytes:
        out = b"" if self._started or isinstance(event, Start) else self._start()
        if isinstance(event, TextDelta):
            out += self._close_call()
            if self._msg is None:
                out += self._open_message()
            self._msg_text.append(event.text)
            assert self._msg is not None
            return out + self._ev("response.output_text.delta", {
                "item_id": self._msg["id"], "output_index": self._msg["index"], "content_index": 0,
                "delta": event.text, "logprobs": []})
        if isinstance(event, ToolCallArgs):
            call = self._call_items.get(event.index)
            if call is None:
                return out
            if call is self._call:
                self._call_args.append(event.delta)
            return out + self._ev("response.function_call_arguments.delta", {
                "item_id": call["id"], "output_index": call["index"], "delta": event.delta})
        if isinstance(event, ToolCallStart):
            out += self._close_message() + self._close_call()
            index = len(self._output)
            self._call = {"id": f"fc_{self._base}_{event.index}", "index": index, "call_id": event.id,
                          "name": event.name}
            self._call_items[event.index] = self._call
            self._call_args = []
            item = call_item(self._call["id"], event.id, event.name, "", status="in_progress")
            return out + self._ev("response.output_item.added", {"output_index": index, "item": item})
        if isinstance(event, Start):
            return self._start(event.model)
        if isinstance(event, Finish):
            refusal = self._extra.get("refusal")
            if refusal and self._msg is None and not any(i["type"] == "message" for i in self._output):
                out += self._open_message()
            out += self._close_message(refusal) + self._close_call()
            if not self._output:  # an empty answer still has its (empty) message item
                out += self._open_message() + self._close_message()
            status = status_of(event.finish_reason)
            usage = usage_for(NAME, event.usage_raw)
            kind = "response.completed" if status == "completed" else "response.incomplete"
            return out + self._ev(kind, {"response": self._response(status, usage, event.finish_reason)})
        return out

    def close(self) -> bytes:
        return b""  # Responses streams have no terminator

    def error(self, status: int, message: str, code: str | None = None) -> bytes:
        kind = vendor_error_body("openai", status, message)["error"]["type"]
        return self._ev("error", {"code": code or kind, "message": message, "param": None})
