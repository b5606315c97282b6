"""OpenAI Chat Completions bodies (also DeepSeek and configured OpenAI-compatible upstreams).

Stable part: `tools` (rendered first by the vendor), `response_format` (documented as a prefix of
the system message), system/developer messages, and the preamble of the first user message (its
parts before its last text part). The tail is the final user message, or the assistant message
with `tool_calls` plus the `tool` messages answering it.

The context turn is a `system` message for OpenAI itself, a `user` message elsewhere: DeepSeek's
chat template gathers every system message at the very start of the prompt, which would put the
volatile values back in front of everything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.rewrite.layout import Layout, RewriteOptions, insert_context, rewrite_schemas, text_of
from gateway.rewrite.move import Mover, rewrite_texts, sort_by_name, stable_hash

PROTOCOL = "openai_chat"
TURNS = "messages"
SYSTEM_ROLES = frozenset({"system", "developer"})
_TOOL_ROLES = frozenset({"tool", "function"})


def tail_start(messages: list[Any]) -> int:
    n = len(messages)
    if n == 0:
        return 0
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    if last.get("role") in _TOOL_ROLES:
        i = n - 1
        while i > 0 and isinstance(messages[i - 1], dict) and messages[i - 1].get("role") in _TOOL_ROLES:
            i -= 1
        if i > 0 and isinstance(messages[i - 1], dict) and messages[i - 1].get("role") == "assistant":
            i -= 1
        return i
    for i in range(n - 1, -1, -1):
        if isinstance(messages[i], dict) and messages[i].get("role") == "user":
            return i
    return n


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    fn = tool.get("function")
    name = fn.get("name") if isinstance(fn, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _leading_system(messages: list[Any]) -> list[Any]:
    out = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in SYSTEM_ROLES:
            break
        out.append(m)
    return out


def _first_turn(messages: list[Any]) -> Any:
    return next((m for m in messages if isinstance(m, dict) and m.get("role") not in SYSTEM_ROLES), None)


def _hashes(body: dict[str, Any], messages: list[Any]) -> tuple[str, str]:
    prefix = stable_hash(PROTOCOL, body.get("tools"), body.get("response_format"), _leading_system(messages))
    first = _first_turn(messages)
    conversation = stable_hash(prefix, first.get("role"), text_of(first.get("content"))) if first else prefix
    return prefix, conversation


def layout(body: dict[str, Any]) -> Layout:
    messages = found if isinstance(found := body.get(TURNS), list) else []
    tail = tail_start(messages)
    prefix, conversation = _hashes(body, messages)
    return Layout(PROTOCOL, TURNS, tail, tail, prefix, conversation, history=_history(messages, tail))


def _history(messages: list[Any], tail: int) -> bool:
    return any(isinstance(m, dict) and m.get("role") not in SYSTEM_ROLES for m in messages[:tail])


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)


def rewrite_content(message: dict[str, Any], is_text: Callable[[Any], bool], mover: Mover, where: str,
                    preamble_only: bool) -> dict[str, Any]:
    """`message` with volatile spans moved out of its `content` (a string or a list of parts);
    the same object when nothing changed. Shared with the Responses API, whose messages have the
    same shape and differ only in which part types carry text (`is_text`)."""
    content = message.get("content")
    if isinstance(content, str):
        if preamble_only:
            return message  # a single text is the turn's question, not a preamble
        new = mover.text(content, where)
        return message if new == content else {**message, "content": new}
    if not isinstance(content, list):
        return message
    parts = rewrite_texts(content, is_text, mover, f"{where}.content", preamble_only)
    return message if parts is None else {**message, "content": parts}


def rewrite_tools(tools: list[Any], mover: Mover, sort: bool, lay: Layout) -> list[Any]:
    if sort:
        tools, lay.tools_sorted = sort_by_name(tools, _tool_name)
    return rewrite_schemas(tools, mover, lay, lambda i, tool: f"tools.{_tool_name(tool) or i}")


def rewrite(body: dict[str, Any], mover: Mover, options: RewriteOptions) -> tuple[dict[str, Any], Layout]:
    messages = body.get(TURNS)
    if not isinstance(messages, list) or not messages:
        lay = layout(body)
        lay.skipped = "no messages"
        return body, lay
    out = dict(body)
    lay = Layout(PROTOCOL, TURNS, 0, 0, "", "")
    if isinstance(body.get("tools"), list) and body["tools"]:
        out["tools"] = rewrite_tools(body["tools"], mover, options.sort_tools, lay)
    tail = tail_start(messages)
    new = list(messages)
    seen_user = False
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if i < tail and role in SYSTEM_ROLES:
            new[i] = rewrite_content(m, _is_text, mover, f"messages.{i}", preamble_only=False)
        elif role == "user":
            if not seen_user and i < tail:
                new[i] = rewrite_content(m, _is_text, mover, f"messages.{i}", preamble_only=True)
            seen_user = True
    lay.prefix_hash, lay.conversation_hash = _hashes(out, new)  # before the context turn goes in
    insert_context(lay, new, tail, mover, context_turn, options, history=_history(messages, tail))
    out[TURNS] = new
    return out, lay


def context_turn(text: str, options: RewriteOptions) -> dict[str, Any]:
    return {"role": options.context_role, "content": text}
