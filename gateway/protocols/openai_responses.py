"""OpenAI Responses API (`POST /v1/responses`)."""

from __future__ import annotations

from typing import Any

from gateway.answer import Answer, ToolCall
from gateway.protocols.base import Conversation, Turn
from gateway.protocols.common import AdapterBase, join_text, now, stable_json, with_prefix
from gateway.protocols.openai_responses_objects import (
    call_item,
    finish_of,
    message_item,
    response_object,
    status_of,
)
from gateway.protocols.openai_responses_stream import ResponsesStreamParser, ResponsesStreamRenderer
from gateway.protocols.usage import OPENAI_RESPONSES, usage_for

NAME = OPENAI_RESPONSES
_TEXT_PARTS = ("input_text", "output_text", "text")


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
                out.append(part["text"])
            else:
                out.append(stable_json(part))
        return join_text(out)
    return stable_json(content)


def responses_conversation(body: dict[str, Any]) -> Conversation:
    system: list[str] = []
    if body.get("instructions"):
        system.append(_content_text(body["instructions"]))
    # State kept by OpenAI, not in the request: it still decides the answer, so it is part of the key.
    for key in ("previous_response_id", "conversation", "prompt"):
        if body.get(key):
            system.append(stable_json({key: body[key]}))
    turns: list[Turn] = []
    tool_traffic = False
    inp = body.get("input")
    if isinstance(inp, str):
        turns.append(Turn("user", inp))
    elif isinstance(inp, list):
        for item in inp:
            if not isinstance(item, dict):
                turns.append(Turn("user", stable_json(item)))
                continue
            kind = item.get("type")
            if (kind is None or kind == "message") and "role" in item:
                text = _content_text(item.get("content"))
                if item["role"] in ("system", "developer"):
                    system.append(text)
                else:
                    turns.append(Turn(str(item["role"]), text))
            elif kind == "function_call":
                tool_traffic = True
                call = {"id": item.get("call_id"), "name": item.get("name"), "arguments": item.get("arguments")}
                turns.append(Turn("assistant", stable_json({"tool_call": call})))
            elif kind == "function_call_output":
                tool_traffic = True
                output = item.get("output")
                text = output if isinstance(output, str) else _content_text(output)
                turns.append(Turn("tool", join_text([stable_json({"tool_call_id": item.get("call_id")}), text])))
            else:  # reasoning, built-in tool calls and their outputs, item references
                kind_s = str(kind or "")
                tool_traffic = tool_traffic or kind_s.endswith(("_call", "_call_output"))
                role = "tool" if kind_s.endswith("_output") else "assistant"
                turns.append(Turn(role, stable_json(item)))
    tools = found if isinstance(found := body.get("tools"), list) else []
    return Conversation(system=join_text(system), turns=turns, tools=tools, has_tool_traffic=tool_traffic)


class OpenAIResponsesAdapter(AdapterBase):
    name = NAME
    vendor = "openai"
    display_name = "OpenAI"
    transport_fields = frozenset({"stream", "stream_options", "prompt_cache_key", "prompt_cache_retention"})
    prompt_fields = frozenset({"input", "instructions"})

    def unreplayable(self, body: dict[str, Any]) -> str | None:
        if body.get("background"):
            return "background"
        if body.get("top_logprobs") or any("logprobs" in str(i) for i in body.get("include") or ()):
            return "logprobs"
        return None


    def conversation(self, body: dict[str, Any]) -> Conversation:
        return responses_conversation(body)

    def parse_answer(self, body: dict[str, Any], provider: str) -> Answer:
        texts: list[str] = []
        refusals: list[str] = []
        calls: list[ToolCall] = []
        for item in body.get("output") or []:
            kind = item.get("type")
            if kind == "message":
                for part in item.get("content") or []:
                    if part.get("type") == "output_text":
                        texts.append(part.get("text") or "")
                    elif part.get("type") == "refusal":
                        refusals.append(part.get("refusal") or "")
            elif kind == "function_call":
                calls.append(ToolCall(item.get("call_id") or item.get("id") or "", item.get("name") or "",
                                      item.get("arguments") or ""))
        extra: dict[str, Any] = {}
        if body.get("service_tier"):
            extra["service_tier"] = body["service_tier"]
        if stored_id(body):
            extra["id"] = stored_id(body)
        if isinstance(body.get("prompt_cache_diagnostics"), dict):
            extra["prompt_cache_diagnostics"] = body["prompt_cache_diagnostics"]
        if refusals:
            extra["refusal"] = "".join(refusals)
        return Answer(
            text="".join(texts),
            model=body.get("model") or "",
            finish_reason=finish_of(body.get("status"), body.get("incomplete_details"), bool(calls)),
            tool_calls=calls,
            provider=provider,
            usage_raw=body.get("usage") or {},
            extra={NAME: extra} if extra else {},
        )

    def stream_parser(self, provider: str) -> ResponsesStreamParser:
        return ResponsesStreamParser(provider)

    def render_answer(self, answer: Answer, request_body: dict[str, Any], response_id: str) -> dict[str, Any]:
        x = answer.extra.get(NAME) or {}
        rid = x.get("id") or with_prefix("resp_", response_id)
        base = rid[len("resp_"):]
        output: list[dict[str, Any]] = []
        if answer.text or x.get("refusal") or not answer.tool_calls:
            output.append(message_item(f"msg_{base}", answer.text, x.get("refusal")))
        for i, call in enumerate(answer.tool_calls):
            output.append(call_item(f"fc_{base}_{i}", call.id, call.name, call.arguments))
        return response_object(request_body, rid, now(), answer.model or request_body.get("model") or "",
                               status_of(answer.finish_reason), output, usage_for(NAME, answer.usage_raw),
                               answer.finish_reason, x)

    def stream_renderer(
        self, request_body: dict[str, Any], response_id: str, include_usage: bool, answer: Answer | None = None
    ) -> ResponsesStreamRenderer:
        extra = (answer.extra.get(NAME) or {}) if answer is not None else {}
        return ResponsesStreamRenderer(request_body, response_id, include_usage, extra)

    def upstream_stream_body(self, body: dict[str, Any]) -> tuple[dict[str, Any], None]:
        return body, None  # usage always arrives in response.completed


def stored_id(response: dict[str, Any]) -> str | None:
    """The id of a response OpenAI stored (`store` is not false): a replay of a cached answer keeps
    it, so a client that chains `previous_response_id` from a cache hit continues the same stored
    conversation upstream instead of naming an id OpenAI never saw."""
    rid = response.get("id")
    return rid if isinstance(rid, str) and rid.startswith("resp_") and response.get("store") is not False else None


adapter = OpenAIResponsesAdapter()
