"""OpenAI Chat Completions (`POST /v1/chat/completions`); also DeepSeek, vLLM and every
OpenAI-compatible upstream, which speak the same protocol."""

from __future__ import annotations

from typing import Any

from gateway.answer import Answer, ToolCall
from gateway.protocols.base import Conversation, Turn
from gateway.protocols.common import AdapterBase, join_text, now, number, stable_json, with_prefix
from gateway.protocols.openai_chat_stream import (
    FINISH,
    ChatStreamParser,
    ChatStreamRenderer,
    UsageChunkFilter,
)
from gateway.protocols.usage import OPENAI_CHAT, usage_for

NAME = OPENAI_CHAT


def content_text(content: Any) -> str:
    """A message's content (string or list of parts) as text; non-text parts as stable JSON tags."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out: list[str] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                out.append(part["text"])
            elif isinstance(part, str):
                out.append(part)
            else:
                out.append(stable_json(part))
        return join_text(out)
    return stable_json(content)


def chat_conversation(messages: Any, tools: list[dict[str, Any]]) -> Conversation:
    system: list[str] = []
    turns: list[Turn] = []
    tool_traffic = False
    for m in messages if isinstance(messages, list) else []:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        text = content_text(m.get("content"))
        if m.get("name"):
            text = join_text([stable_json({"name": m["name"]}), text])
        if role in ("system", "developer"):
            system.append(text)
            continue
        if role == "assistant":
            tags = []
            for call in m.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                fn = call.get("function") or {}
                tags.append(stable_json({"tool_call": {"id": call.get("id"), "name": fn.get("name"),
                                                       "arguments": fn.get("arguments")}}))
            if m.get("function_call"):
                tags.append(stable_json({"function_call": m["function_call"]}))
            if tags:
                tool_traffic = True
                text = join_text([text, *tags])
        elif role in ("tool", "function"):
            tool_traffic = True
            ref = m.get("tool_call_id") or m.get("name")
            text = join_text([stable_json({"tool_call_id": ref}), text])
            role = "tool"
        turns.append(Turn(role=str(role), text=text))
    return Conversation(system=join_text(system), turns=turns, tools=tools, has_tool_traffic=tool_traffic)


def chat_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    tools = body.get("tools")
    if isinstance(tools, list):
        return tools
    functions = body.get("functions")  # the legacy spelling
    if isinstance(functions, list):
        return [{"type": "function", "function": f} for f in functions]
    return []


class OpenAIChatAdapter(AdapterBase):
    name = NAME
    vendor = "openai"
    display_name = "OpenAI"
    # request_id: vLLM's per-request identifier; prompt_cache_key/_retention: routing hint and lifetime of
    # OpenAI's own prompt cache (they change cost and `cached_tokens`, never the generated answer)
    transport_fields = frozenset({"stream", "stream_options", "request_id", "prompt_cache_key",
                                  "prompt_cache_retention"})
    prompt_fields = frozenset({"messages"})

    def unreplayable(self, body: dict[str, Any]) -> str | None:
        if number(body.get("n"), 1) > 1:
            return "n > 1"
        if body.get("logprobs") or body.get("top_logprobs"):
            return "logprobs"
        if "audio" in (body.get("modalities") or ()):
            return "audio output"
        return None


    def conversation(self, body: dict[str, Any]) -> Conversation:
        return chat_conversation(body.get("messages"), chat_tools(body))

    def parse_answer(self, body: dict[str, Any], provider: str) -> Answer:
        choices = body.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        msg = choice.get("message") or {}
        calls = []
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function") or {}
            calls.append(ToolCall(tc.get("id") or "", fn.get("name") or "", fn.get("arguments") or ""))
        if msg.get("function_call"):
            fc = msg["function_call"]
            calls.append(ToolCall("", fc.get("name") or "", fc.get("arguments") or ""))
        raw_finish = choice.get("finish_reason") or "stop"
        extra: dict[str, Any] = {k: body[k] for k in ("system_fingerprint", "service_tier") if body.get(k)}
        if msg.get("refusal"):
            extra["refusal"] = msg["refusal"]
        reasoning = msg.get("reasoning_content")  # DeepSeek's reasoner, vLLM's reasoning parsers
        content = msg.get("content")
        if isinstance(content, list):  # some OpenAI-compatible servers answer with a list of parts
            content = "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
        return Answer(
            text=content if isinstance(content, str) else "",
            model=body.get("model") or "",
            finish_reason=FINISH.get(raw_finish, raw_finish),
            tool_calls=calls,
            provider=provider,
            usage_raw=body.get("usage") or {},
            reasoning=reasoning if isinstance(reasoning, str) else "",
            extra={NAME: extra} if extra else {},
        )

    def stream_parser(self, provider: str) -> ChatStreamParser:
        return ChatStreamParser(provider)

    def render_answer(self, answer: Answer, request_body: dict[str, Any], response_id: str) -> dict[str, Any]:
        x = answer.extra.get(NAME) or {}
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": answer.text if answer.text or not answer.tool_calls else None,
            "refusal": x.get("refusal"),
            "annotations": [],
        }
        # Reasoning from any vendor as LiteLLM returns it (entries cached before `reasoning` kept it in extra).
        reasoning = answer.reasoning or x.get("reasoning_content")
        if reasoning:
            msg["reasoning_content"] = reasoning
        if answer.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in answer.tool_calls
            ]
        out: dict[str, Any] = {
            "id": with_prefix("chatcmpl-", response_id),
            "object": "chat.completion",
            "created": now(),
            "model": answer.model or request_body.get("model") or "",
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": answer.finish_reason}],
            "usage": usage_for(NAME, answer.usage_raw),
        }
        for key in ("service_tier", "system_fingerprint"):
            if x.get(key):
                out[key] = x[key]
        return out

    def stream_renderer(
        self, request_body: dict[str, Any], response_id: str, include_usage: bool, answer: Answer | None = None
    ) -> ChatStreamRenderer:
        extra = (answer.extra.get(NAME) or {}) if answer is not None else {}
        return ChatStreamRenderer(request_body, response_id, include_usage, extra)

    def upstream_stream_body(self, body: dict[str, Any]) -> tuple[dict[str, Any], UsageChunkFilter | None]:
        opts = body.get("stream_options")
        if isinstance(opts, dict) and opts.get("include_usage") is True:
            return body, None
        new = dict(body)
        new["stream_options"] = {**(opts if isinstance(opts, dict) else {}), "include_usage": True}
        return new, UsageChunkFilter()


adapter = OpenAIChatAdapter()
