"""Anthropic Messages bodies.

Stable part, in the vendor's cache order: `tools`, `system` (a string or text blocks), then the
messages before the tail, of which only the first user message's preamble (its text blocks before
the last one) is rewritten. The tail is the final user message, or — when it carries
`tool_result` blocks, which must directly follow their `tool_use` — the assistant message that made
the calls plus that user message. The context turn is a user message; the API merges consecutive
user turns.

Tools are not re-sorted when one of them carries the client's own `cache_control`: client markers
are never moved, and sorting would move the marked tool (and the prefix it closes).
"""

from __future__ import annotations

from typing import Any

from gateway.rewrite.layout import Layout, RewriteOptions, insert_context, rewrite_schemas, text_of
from gateway.rewrite.move import Mover, rewrite_texts, sort_by_name, stable_hash

PROTOCOL = "anthropic_messages"
TURNS = "messages"


def _has_tool_result(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def tail_start(messages: list[Any]) -> int:
    n = len(messages)
    for i in range(n - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            if _has_tool_result(m) and i > 0 and isinstance(messages[i - 1], dict) \
                    and messages[i - 1].get("role") == "assistant":
                return i - 1
            return i
    return n


def _hashes(body: dict[str, Any], messages: list[Any]) -> tuple[str, str]:
    tools = [{k: v for k, v in t.items() if k != "cache_control"} if isinstance(t, dict) else t
             for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, list):
        system = [{k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b for b in system]
    prefix = stable_hash(PROTOCOL, tools, system)
    first = next((m for m in messages if isinstance(m, dict)), None)
    conversation = stable_hash(prefix, first.get("role"), text_of(first.get("content"))) if first else prefix
    return prefix, conversation


def layout(body: dict[str, Any]) -> Layout:
    messages = found if isinstance(found := body.get(TURNS), list) else []
    tail = tail_start(messages)
    prefix, conversation = _hashes(body, messages)
    return Layout(PROTOCOL, TURNS, tail, tail, prefix, conversation, history=tail > 0)


def _is_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def _rewrite_tools(tools: list[Any], mover: Mover, sort: bool, lay: Layout) -> list[Any]:
    if any(isinstance(t, dict) and "cache_control" in t for t in tools):
        lay.tools_unsorted_kept = "a tool carries the client's cache_control"
    elif sort:
        tools, lay.tools_sorted = sort_by_name(tools, lambda t: t.get("name") if isinstance(t, dict) else None)
    return rewrite_schemas(tools, mover, lay, lambda i, tool: f"tools.{tool.get('name') or i}")


def rewrite(body: dict[str, Any], mover: Mover, options: RewriteOptions) -> tuple[dict[str, Any], Layout]:
    messages = body.get(TURNS)
    if not isinstance(messages, list) or not messages:
        lay = layout(body)
        lay.skipped = "no messages"
        return body, lay
    out = dict(body)
    lay = Layout(PROTOCOL, TURNS, 0, 0, "", "")
    if isinstance(body.get("tools"), list) and body["tools"]:
        out["tools"] = _rewrite_tools(body["tools"], mover, options.sort_tools, lay)
    system = body.get("system")
    if isinstance(system, str):
        out["system"] = mover.text(system, "system")
    elif isinstance(system, list):
        out["system"] = rewrite_texts(system, _is_text, mover, "system", preamble_only=False) or system
    tail = tail_start(messages)
    new = list(messages)
    first = next((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), None)
    if first is not None and first < tail and isinstance(messages[first].get("content"), list):
        blocks = rewrite_texts(messages[first]["content"], _is_text, mover, f"messages.{first}.content",
                               preamble_only=True)
        if blocks is not None:
            new[first] = {**messages[first], "content": blocks}
    lay.prefix_hash, lay.conversation_hash = _hashes(out, new)  # before the context turn goes in
    insert_context(lay, new, tail, mover, context_turn, options, history=tail > 0)
    out[TURNS] = new
    return out, lay


def context_turn(text: str, options: RewriteOptions) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}
