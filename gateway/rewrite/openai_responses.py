"""OpenAI Responses bodies.

Stable part: `tools`, `text.format` (the structured-output schema), `instructions`, system/developer
input messages, and the preamble of the first user message (its `input_text` parts before the
last). The tail is the final user message, or the trailing `*_call` items (with any reasoning items
among them) plus their `*_call_output` items. A plain-string `input` is the question itself: when a
context block is needed it becomes `[context, {"role": "user", "content": <the same string>}]`.
"""

from __future__ import annotations

from typing import Any

from gateway.rewrite.layout import Layout, RewriteOptions, insert_context, text_of
from gateway.rewrite.move import Mover, stable_hash
from gateway.rewrite.openai_chat import rewrite_content, rewrite_tools

PROTOCOL = "openai_responses"
TURNS = "input"
SYSTEM_ROLES = frozenset({"system", "developer"})
_TEXT_PARTS = frozenset({"input_text", "text"})


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type", "message") == "message" and "role" in item


def _kind(item: Any) -> str:
    return str(item.get("type", "message")) if isinstance(item, dict) else ""


def tail_start(items: list[Any]) -> int:
    n = len(items)
    if n == 0:
        return 0
    if _kind(items[-1]).endswith("_output"):
        i = n - 1
        while i > 0 and _kind(items[i - 1]).endswith("_output"):
            i -= 1
        while i > 0 and (_kind(items[i - 1]).endswith("_call") or _kind(items[i - 1]) == "reasoning"):
            i -= 1
        return i
    for i in range(n - 1, -1, -1):
        if _is_message(items[i]) and items[i].get("role") == "user":
            return i
    return n


def _items(body: dict[str, Any]) -> list[Any]:
    value = body.get(TURNS)
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return value if isinstance(value, list) else []


def _hashes(body: dict[str, Any], items: list[Any]) -> tuple[str, str]:
    leading = []
    for item in items:
        if not (_is_message(item) and item.get("role") in SYSTEM_ROLES):
            break
        leading.append(item)
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    prefix = stable_hash(PROTOCOL, body.get("tools"), fmt, body.get("instructions"), leading)
    first = next((i for i in items if _is_message(i) and i.get("role") not in SYSTEM_ROLES), None)
    conversation = stable_hash(prefix, first.get("role"), text_of(first.get("content"))) if first else prefix
    return prefix, conversation


def layout(body: dict[str, Any]) -> Layout:
    items = _items(body)
    tail = tail_start(items)
    prefix, conversation = _hashes(body, items)
    return Layout(PROTOCOL, TURNS, tail, tail, prefix, conversation, history=_history(items, tail))


def _history(items: list[Any], tail: int) -> bool:
    return any(not (_is_message(i) and i.get("role") in SYSTEM_ROLES) for i in items[:tail])


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str)


def rewrite(body: dict[str, Any], mover: Mover, options: RewriteOptions) -> tuple[dict[str, Any], Layout]:
    raw = body.get(TURNS)
    if not (isinstance(raw, str) or (isinstance(raw, list) and raw)):
        lay = layout(body)
        lay.skipped = "no input"
        return body, lay
    out = dict(body)
    lay = Layout(PROTOCOL, TURNS, 0, 0, "", "")
    if isinstance(body.get("tools"), list) and body["tools"]:
        out["tools"] = rewrite_tools(body["tools"], mover, options.sort_tools, lay)
    if isinstance(body.get("instructions"), str):
        out["instructions"] = mover.text(body["instructions"], "instructions")
    items = list(_items(body))
    tail = tail_start(items)
    seen_user = False
    for i, item in enumerate(items):
        if not _is_message(item):
            continue
        role = item.get("role")
        if i < tail and role in SYSTEM_ROLES:
            items[i] = rewrite_content(item, _is_text, mover, f"input.{i}", preamble_only=False)
        elif role == "user":
            if not seen_user and i < tail:
                items[i] = rewrite_content(item, _is_text, mover, f"input.{i}", preamble_only=True)
            seen_user = True
    lay.prefix_hash, lay.conversation_hash = _hashes(out, items)  # before the context turn goes in
    # `items[:tail]` is the same before and after the context turn goes in at `tail`.
    insert_context(lay, items, tail, mover, context_turn, options, history=_history(items, tail))
    if lay.context_index is not None or isinstance(raw, list):
        out[TURNS] = items  # a plain-string `input` stays a string unless the context turn needs a list
    return out, lay


def context_turn(text: str, options: RewriteOptions) -> dict[str, Any]:
    # Responses is OpenAI's own API: a system message anywhere in `input` is rendered in place.
    return {"type": "message", "role": "system", "content": text}
