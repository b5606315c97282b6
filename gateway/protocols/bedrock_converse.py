"""Amazon Bedrock Converse (`POST /model/{modelId}/converse`, `/converse-stream`): the model and the stream flag
come from the path, as with Gemini. Errors are rest-json: `{"message": ...}` with the type in `x-amzn-ErrorType`
(botocore reads the error code from that header)."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.answer import Answer, ToolCall
from gateway.protocols.base import Conversation
from gateway.protocols.bedrock_stream import (
    FINISH,
    ConverseStreamParser,
    ConverseStreamRenderer,
    stop_reason_for,
    tool_input,
)
from gateway.protocols.common import AdapterBase, block_turns, join_text, stable_json
from gateway.protocols.eventstream import CONTENT_TYPE
from gateway.protocols.usage import BEDROCK, usage_for

NAME = BEDROCK
ERROR_TYPES = {400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException",
               404: "ResourceNotFoundException", 408: "ModelTimeoutException", 413: "ValidationException",
               424: "ModelErrorException", 429: "ThrottlingException", 500: "InternalServerException",
               502: "InternalServerException", 503: "ServiceUnavailableException",
               504: "ModelTimeoutException"}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status, "InternalServerException" if status >= 500 else "ValidationException")


def without_cache_points(blocks: Any) -> list[Any]:
    """A list of Converse blocks minus `cachePoint` ones (they never change the answer)."""
    if not isinstance(blocks, list):
        return []
    return [b for b in blocks if not (isinstance(b, dict) and "cachePoint" in b)]


def _blocks_text(content: Any) -> tuple[str, bool, bool]:
    """(text, has tool traffic, only tool results) of a Converse content list."""
    out: list[str] = []
    tools = results = 0
    blocks = without_cache_points(content)
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            out.append(block["text"])
            continue
        if isinstance(block, dict) and ("toolUse" in block or "toolResult" in block):
            tools += 1
            results += "toolResult" in block
        out.append(stable_json(block))
    return join_text(out), bool(tools), bool(blocks) and results == len(blocks)


def converse_conversation(body: dict[str, Any]) -> Conversation:
    system, _, _ = _blocks_text(body.get("system"))
    turns, tool_traffic = block_turns(body.get("messages"), _blocks_text)
    raw = body.get("toolConfig")
    config: dict[str, Any] = raw if isinstance(raw, dict) else {}
    return Conversation(system=system, turns=turns, tools=without_cache_points(config.get("tools")),
                        has_tool_traffic=tool_traffic)


class BedrockConverseAdapter(AdapterBase):
    name = NAME
    vendor = "bedrock"
    display_name = "Bedrock"
    stream_in_body = False  # the path decides: /converse or /converse-stream
    transport_fields: frozenset[str] = frozenset()
    prompt_fields = frozenset({"messages", "system", "toolConfig"})
    stream_media_type = CONTENT_TYPE

    def model_of(self, body: dict[str, Any], path_model: str | None) -> str:
        if path_model:
            return path_model
        return super().model_of(body, path_model)

    def is_stream(self, body: dict[str, Any], path_stream: bool) -> bool:
        return path_stream

    def conversation(self, body: dict[str, Any]) -> Conversation:
        return converse_conversation(body)

    def parse_answer(self, body: dict[str, Any], provider: str) -> Answer:
        message = ((body.get("output") or {}).get("message") or {}) if isinstance(body.get("output"), dict) else {}
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        raw_content = message.get("content")
        content: list[Any] = raw_content if isinstance(raw_content, list) else []
        plain = True
        for block in content:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif isinstance(block.get("toolUse"), dict):
                use = block["toolUse"]
                calls.append(ToolCall(str(use.get("toolUseId") or ""), str(use.get("name") or ""),
                                      orjson.dumps(use.get("input") or {}).decode()))
            else:
                reasoning = (block.get("reasoningContent") or {}).get("reasoningText") or {}
                if isinstance(reasoning, dict) and isinstance(reasoning.get("text"), str):
                    thoughts.append(reasoning["text"])
                plain = False
        raw_stop = str(body.get("stopReason") or "end_turn")
        extra: dict[str, Any] = {"stop_reason": raw_stop}
        if not plain:
            extra["content"] = content
        return Answer(text="".join(texts), model="", finish_reason=FINISH.get(raw_stop, "stop"), tool_calls=calls,
                      provider=provider, usage_raw=usage if isinstance(usage := body.get("usage"), dict) else {},
                      reasoning="".join(thoughts), extra={NAME: extra})

    def stream_parser(self, provider: str) -> ConverseStreamParser:
        return ConverseStreamParser(provider)

    def render_answer(self, answer: Answer, request_body: dict[str, Any], response_id: str) -> dict[str, Any]:
        x = answer.extra.get(NAME) or {}
        content = x.get("content")
        if content is None:
            content = [{"text": answer.text}] if answer.text or not answer.tool_calls else []
            content += [{"toolUse": {"toolUseId": c.id, "name": c.name, "input": tool_input(c.arguments)}}
                        for c in answer.tool_calls]
        return {"output": {"message": {"role": "assistant", "content": content}},
                "stopReason": stop_reason_for(answer.finish_reason, x),
                "usage": usage_for(NAME, answer.usage_raw), "metrics": {"latencyMs": 0}}

    def stream_renderer(self, request_body: dict[str, Any], response_id: str, include_usage: bool,
                        answer: Answer | None = None) -> ConverseStreamRenderer:
        return ConverseStreamRenderer(answer)

    def error_body(self, status: int, message: str, code: str | None = None) -> dict[str, Any]:
        return {"message": message}

    def error_headers(self, status: int, code: str | None = None) -> dict[str, str]:
        kind = code if code and code[:1].isupper() and code.endswith("Exception") else error_type(status)
        return {"x-amzn-errortype": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"}

    def parse_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            return body.decode("utf-8", "replace")[:2000] or f"upstream error (HTTP {status})", None
        if isinstance(obj, dict) and isinstance(obj.get("message") or obj.get("Message"), str):
            return str(obj.get("message") or obj.get("Message")), None
        return super().parse_error(status, body)

    def upstream_stream_body(self, body: dict[str, Any]) -> tuple[dict[str, Any], None]:
        return body, None  # the usage always arrives in `metadata`


adapter = BedrockConverseAdapter()
