"""Gemini generateContent / streamGenerateContent (`/{v1beta,v1}/models/{model}:...`): the model and
the stream flag come from the path, not the body."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.answer import Answer, ToolCall
from gateway.protocols.base import Conversation, Turn
from gateway.protocols.common import AdapterBase, join_text, number, stable_json
from gateway.protocols.gemini_stream import (
    GeminiStreamParser,
    GeminiStreamRenderer,
    call_id,
    finish_of,
    finish_reason_for,
    function_call_part,
)
from gateway.protocols.usage import GEMINI, usage_for

NAME = GEMINI


def _get(body: dict[str, Any], camel: str, snake: str) -> Any:
    """REST accepts both spellings of a field (the SDK sends camelCase)."""
    value = body.get(camel)
    return body.get(snake) if value is None else value


def _parts_text(content: Any) -> tuple[str, bool, bool]:
    """(text, has tool traffic, only function responses) of a Content (or a bare string)."""
    if content is None:
        return "", False, False
    if isinstance(content, str):
        return content, False, False
    parts = content.get("parts") if isinstance(content, dict) else content
    if not isinstance(parts, list):
        return stable_json(content), False, False
    out: list[str] = []
    tools = False
    responses = 0
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
            out.append(part["text"])
            continue
        if isinstance(part, dict):
            if "functionCall" in part or "function_call" in part:
                tools = True
            elif "functionResponse" in part or "function_response" in part:
                tools = True
                responses += 1
        out.append(stable_json(part))
    return join_text(out), tools, bool(parts) and responses == len(parts)


def gemini_conversation(body: dict[str, Any]) -> Conversation:
    system_text, _, _ = _parts_text(_get(body, "systemInstruction", "system_instruction"))
    system = [system_text]
    cached = _get(body, "cachedContent", "cached_content")
    if cached:  # the cached prefix is not in the request but decides the answer
        system.append(stable_json({"cachedContent": cached}))
    turns: list[Turn] = []
    tool_traffic = False
    for content in body.get("contents") or []:
        text, tools, only_responses = _parts_text(content)
        tool_traffic = tool_traffic or tools
        role = content.get("role") if isinstance(content, dict) else "user"
        role = "tool" if only_responses else ("assistant" if role == "model" else "user")
        turns.append(Turn(role, text))
    tools_list = found if isinstance(found := body.get("tools"), list) else []
    return Conversation(system=join_text(system), turns=turns, tools=tools_list, has_tool_traffic=tool_traffic)


class GeminiAdapter(AdapterBase):
    name = NAME
    vendor = "gemini"
    display_name = "Gemini"
    stream_in_body = False
    key_in_query = True
    transport_fields: frozenset[str] = frozenset()  # streaming is chosen by the path (`:streamGenerateContent`)
    prompt_fields = frozenset({"contents", "systemInstruction", "system_instruction"})

    def unreplayable(self, body: dict[str, Any]) -> str | None:
        config = body.get("generationConfig") or body.get("generation_config") or {}
        if isinstance(config, dict):
            if number(config.get("candidateCount", config.get("candidate_count")), 1) > 1:
                return "candidateCount > 1"
            if config.get("responseLogprobs") or config.get("response_logprobs"):
                return "logprobs"
        return None


    def model_of(self, body: dict[str, Any], path_model: str | None) -> str:
        model = path_model or body.get("model") or ""
        return model[len("models/"):] if model.startswith("models/") else model

    def is_stream(self, body: dict[str, Any], path_stream: bool) -> bool:
        return path_stream

    def conversation(self, body: dict[str, Any]) -> Conversation:
        return gemini_conversation(body)

    def parse_answer(self, body: dict[str, Any], provider: str) -> Answer:
        candidates = body.get("candidates") or []
        cand = candidates[0] if candidates else {}
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        extra: dict[str, Any] = {}
        for part in (cand.get("content") or {}).get("parts") or []:
            if part.get("text") is not None:
                if part.get("thought"):  # a thought summary (includeThoughts)
                    thoughts.append(part["text"])
                else:
                    texts.append(part["text"])
                    if part.get("thoughtSignature"):
                        extra["text_signature"] = part["thoughtSignature"]
            elif part.get("functionCall") is not None:
                fc = part["functionCall"]
                if fc.get("id"):
                    extra["native_ids"] = True
                cid = call_id(fc, part.get("thoughtSignature"), body.get("responseId") or "", len(calls))
                calls.append(ToolCall(cid, fc.get("name") or "", orjson.dumps(fc.get("args") or {}).decode()))
        raw = cand.get("finishReason")
        blocked = not candidates and bool((body.get("promptFeedback") or {}).get("blockReason"))
        if raw:
            extra["finishReason"] = raw
        return Answer(
            text="".join(texts),
            model=body.get("modelVersion") or "",
            finish_reason="content_filter" if blocked else finish_of(raw, bool(calls)),
            tool_calls=calls,
            provider=provider,
            usage_raw=body.get("usageMetadata") or {},
            reasoning="".join(thoughts),
            extra={NAME: extra} if extra else {},
        )

    def stream_parser(self, provider: str) -> GeminiStreamParser:
        return GeminiStreamParser(provider)

    def render_answer(self, answer: Answer, request_body: dict[str, Any], response_id: str) -> dict[str, Any]:
        x = answer.extra.get(NAME) or {}
        parts: list[dict[str, Any]] = []
        if answer.text or not answer.tool_calls:
            part: dict[str, Any] = {"text": answer.text}
            if x.get("text_signature"):
                part["thoughtSignature"] = x["text_signature"]
            parts.append(part)
        for call in answer.tool_calls:
            try:
                args = orjson.loads(call.arguments) if call.arguments else {}
            except orjson.JSONDecodeError:
                args = {}
            parts.append(function_call_part(call.id, call.name, args if isinstance(args, dict) else {},
                                            bool(x.get("native_ids"))))
        cand = {"content": {"parts": parts, "role": "model"},
                "finishReason": finish_reason_for(answer.finish_reason, x), "index": 0}
        return {
            "candidates": [cand],
            "usageMetadata": usage_for(NAME, answer.usage_raw),
            "modelVersion": answer.model,
            "responseId": response_id,
        }

    def stream_renderer(
        self, request_body: dict[str, Any], response_id: str, include_usage: bool, answer: Answer | None = None
    ) -> GeminiStreamRenderer:
        extra = (answer.extra.get(NAME) or {}) if answer is not None else {}
        model = answer.model if answer is not None else str(request_body.get("model") or "")
        return GeminiStreamRenderer(request_body, response_id, model, extra)

    def upstream_stream_body(self, body: dict[str, Any]) -> tuple[dict[str, Any], None]:
        return body, None  # every chunk carries usageMetadata


adapter = GeminiAdapter()
