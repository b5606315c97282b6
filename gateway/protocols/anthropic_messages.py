"""Anthropic Messages (`POST /v1/messages`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from gateway.answer import Answer, ToolCall
from gateway.protocols.anthropic_stream import (
    FINISH,
    AnthropicStreamParser,
    AnthropicStreamRenderer,
    stop_reason_for,
    tool_input,
)
from gateway.protocols.base import Conversation
from gateway.protocols.common import (
    AdapterBase,
    block_turns,
    join_text,
    stable_json,
    with_prefix,
    without_cache_control,
)
from gateway.protocols.usage import ANTHROPIC, usage_for

NAME = ANTHROPIC
_TOOL_BLOCKS = ("tool_use", "tool_result", "server_tool_use", "mcp_tool_use", "mcp_tool_result")


def _blocks_text(content: Any) -> tuple[str, bool, bool]:
    """(text, has tool traffic, only tool results) of a message's content."""
    if content is None:
        return "", False, False
    if isinstance(content, str):
        return content, False, False
    if not isinstance(content, list):
        return stable_json(content), False, False
    out: list[str] = []
    tools = False
    results = 0
    for block in content:
        if not isinstance(block, dict):
            out.append(stable_json(block))
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and not block.get("citations"):
            out.append(block["text"])
            continue
        if kind in _TOOL_BLOCKS or str(kind).endswith("_tool_result"):
            tools = True
            results += kind == "tool_result"
        out.append(stable_json(without_cache_control(block)))
    return join_text(out), tools, bool(content) and results == len(content)


def anthropic_conversation(body: dict[str, Any]) -> Conversation:
    system_text, _, _ = _blocks_text(body.get("system"))
    turns, tool_traffic = block_turns(body.get("messages"), _blocks_text)
    tools_list = found if isinstance(found := body.get("tools"), list) else []
    return Conversation(system=system_text, turns=turns, tools=without_cache_control(tools_list),
                        has_tool_traffic=tool_traffic)


class AnthropicMessagesAdapter(AdapterBase):
    name = NAME
    vendor = "anthropic"
    display_name = "Anthropic"
    transport_fields = frozenset({"stream"})
    prompt_fields = frozenset({"messages", "system"})


    def conversation(self, body: dict[str, Any]) -> Conversation:
        return anthropic_conversation(body)

    def parse_answer(self, body: dict[str, Any], provider: str) -> Answer:
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        plain = True  # only text and tool_use blocks: the neutral answer replays them exactly
        content = body.get("content") or []
        for block in content:
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text") or "")
                plain = plain and not block.get("citations")
            elif kind == "tool_use":
                calls.append(ToolCall(block.get("id") or "", block.get("name") or "",
                                      orjson.dumps(block.get("input") or {}).decode()))
            else:
                if kind == "thinking":
                    thoughts.append(block.get("thinking") or "")
                plain = False
        raw_stop = body.get("stop_reason") or "end_turn"
        extra: dict[str, Any] = {"stop_reason": raw_stop}
        if body.get("stop_sequence") is not None:
            extra["stop_sequence"] = body["stop_sequence"]
        if not plain:
            extra["content"] = content  # thinking, citations, server tools: replayed as they came
        if isinstance(body.get("id"), str):
            extra["vendor_message_id"] = body["id"]  # what the next request's cache diagnostics name
        if isinstance(body.get("diagnostics"), dict):
            extra["cache_diagnostics"] = body["diagnostics"]
        return Answer(
            text="".join(texts),
            model=body.get("model") or "",
            finish_reason=FINISH.get(raw_stop, "stop"),
            tool_calls=calls,
            provider=provider,
            usage_raw=body.get("usage") or {},
            reasoning="".join(thoughts),
            extra={NAME: extra},
        )

    def stream_parser(self, provider: str) -> AnthropicStreamParser:
        return AnthropicStreamParser(provider)

    def render_answer(self, answer: Answer, request_body: dict[str, Any], response_id: str) -> dict[str, Any]:
        x = answer.extra.get(NAME) or {}
        content = x.get("content")
        if content is None:
            content = [{"type": "text", "text": answer.text}] if answer.text or not answer.tool_calls else []
            for call in answer.tool_calls:
                content.append({"type": "tool_use", "id": call.id, "name": call.name,
                                "input": tool_input(call.arguments)})
        return {
            "id": with_prefix("msg_", response_id),
            "type": "message",
            "role": "assistant",
            "model": answer.model or request_body.get("model") or "",
            "content": content,
            "stop_reason": stop_reason_for(answer.finish_reason, x),
            "stop_sequence": x.get("stop_sequence"),
            "usage": usage_for(NAME, answer.usage_raw),
        }

    def stream_renderer(
        self, request_body: dict[str, Any], response_id: str, include_usage: bool, answer: Answer | None = None
    ) -> AnthropicStreamRenderer:
        return AnthropicStreamRenderer(request_body, response_id, answer)

    def replay(
        self, answer: Answer, request_body: dict[str, Any], response_id: str, include_usage: bool,
        chunk_chars: int = 0,
    ) -> Iterator[bytes]:
        r = self.stream_renderer(request_body, response_id, include_usage, answer)
        content = (answer.extra.get(NAME) or {}).get("content")
        if content is not None:  # replay the blocks as they came (thinking, citations, server tools)
            yield from r.replay_blocks(answer, content, chunk_chars)
            return
        for event in answer.events(chunk_chars):
            yield r.render(event)
        yield r.close()

    def upstream_stream_body(self, body: dict[str, Any]) -> tuple[dict[str, Any], None]:
        return body, None  # usage always comes in message_start / message_delta


adapter = AnthropicMessagesAdapter()
