"""Gemini generateContent bodies (REST camelCase, as google-genai sends them).

Stable part: `systemInstruction`, `tools` (function declarations sorted by name inside each tool
entry; the entries themselves keep their order), `toolConfig`, and the first user content's
preamble (its text parts before the last). The tail is the final user content, or — when it answers
function calls — the model content with the `functionCall`s plus that content. The context turn is
a user content.

The same split serves the explicit cache (`gateway/provider_cache/gemini.py`): what a CachedContent
may hold is exactly the stable part.
"""

from __future__ import annotations

import functools
from typing import Any

from gateway.rewrite.layout import Layout, RewriteOptions, insert_context, rewrite_schemas
from gateway.rewrite.move import Mover, canonical, rewrite_texts, sort_by_name, stable_hash

PROTOCOL = "gemini"
TURNS = "contents"


def _declaration_where(tool: int, _j: int, decl: dict[str, Any]) -> str:
    return f"tools.{tool}.{decl.get('name')}"


def _role(content: Any) -> str:
    return str(content.get("role") or "user") if isinstance(content, dict) else ""


def _has(content: Any, key: str) -> bool:
    parts = content.get("parts") if isinstance(content, dict) else None
    return isinstance(parts, list) and any(isinstance(p, dict) and key in p for p in parts)


def tail_start(contents: list[Any]) -> int:
    for i in range(len(contents) - 1, -1, -1):
        if _role(contents[i]) == "user":
            if _has(contents[i], "functionResponse") and i > 0 and _role(contents[i - 1]) == "model":
                return i - 1
            return i
    return len(contents)


def parts_text(content: Any) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return ""
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def _hashes(body: dict[str, Any], contents: list[Any]) -> tuple[str, str]:
    prefix = stable_hash(PROTOCOL, body.get("systemInstruction"), body.get("tools"), body.get("toolConfig"))
    first = next((c for c in contents if isinstance(c, dict)), None)
    conversation = stable_hash(prefix, _role(first), parts_text(first)) if first else prefix
    return prefix, conversation


def layout(body: dict[str, Any]) -> Layout:
    contents = found if isinstance(found := body.get(TURNS), list) else []
    tail = tail_start(contents)
    prefix, conversation = _hashes(body, contents)
    return Layout(PROTOCOL, TURNS, tail, tail, prefix, conversation, history=tail > 0)


def _is_text(part: Any) -> bool:
    # Thought parts are the model's own reasoning, echoed back: not prompt text to rewrite.
    return isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")


def _parts(content: dict[str, Any], mover: Mover, where: str, preamble_only: bool) -> dict[str, Any]:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return content
    out = rewrite_texts(parts, _is_text, mover, f"{where}.parts", preamble_only)
    return content if out is None else {**content, "parts": out}


def _rewrite_tools(tools: list[Any], mover: Mover, sort: bool, lay: Layout) -> list[Any]:
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("functionDeclarations"), list):
            out.append(canonical(tool) if isinstance(tool, dict) else tool)
            continue
        decls = tool["functionDeclarations"]
        if sort:
            decls, moved = sort_by_name(decls, lambda d: d.get("name") if isinstance(d, dict) else None)
            lay.tools_sorted = lay.tools_sorted or moved
        # Declarations are named within their tool entry (which has no name of its own).
        new_decls = rewrite_schemas(decls, mover, lay, functools.partial(_declaration_where, i))
        out.append(canonical({**tool, "functionDeclarations": new_decls}))
    return out


def rewrite(body: dict[str, Any], mover: Mover, options: RewriteOptions) -> tuple[dict[str, Any], Layout]:
    contents = body.get(TURNS)
    if not isinstance(contents, list) or not contents:
        lay = layout(body)
        lay.skipped = "no contents"
        return body, lay
    out = dict(body)
    lay = Layout(PROTOCOL, TURNS, 0, 0, "", "")
    if isinstance(body.get("systemInstruction"), dict):
        out["systemInstruction"] = _parts(body["systemInstruction"], mover, "systemInstruction", preamble_only=False)
    if isinstance(body.get("tools"), list) and body["tools"]:
        out["tools"] = _rewrite_tools(body["tools"], mover, options.sort_tools, lay)
    tail = tail_start(contents)
    new = list(contents)
    first = next((i for i, c in enumerate(contents) if _role(c) == "user"), None)
    if first is not None and first < tail:
        new[first] = _parts(contents[first], mover, f"contents.{first}", preamble_only=True)
    lay.prefix_hash, lay.conversation_hash = _hashes(out, new)  # before the context turn goes in
    insert_context(lay, new, tail, mover, context_turn, options, history=tail > 0)
    out[TURNS] = new
    return out, lay


def context_turn(text: str, options: RewriteOptions) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}
