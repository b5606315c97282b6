"""Where a native request body's stable prefix ends, and what the rewrite did to it.

Every protocol module (`openai_chat.py`, `openai_responses.py`, `anthropic.py`, `gemini.py`, listed in
`protocols.py`) offers the same three functions, so the stage, the provider-cache layer and lint never
branch on the protocol themselves:

    layout(body) -> Layout                       # read-only: where the tail starts, prefix hash
    rewrite(body, mover, options) -> (body, Layout)   # a rewritten copy (the input is not mutated)
    context_turn(text, options) -> dict          # the turn that carries the context block

Terms: the *turns* are the body's conversation list (`messages`, `input`, `contents`). The *tail* is
the final user turn: the final user message, or — when the conversation ends in tool results — the
assistant turn that made the calls plus the results (an API requires those to stay adjacent). The
*stable part* is everything before the tail; the context block goes between the two.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway.rewrite.move import Moved, Mover, canonical, is_canonical, rewrite_description


@dataclass(frozen=True, slots=True)
class RewriteOptions:
    sort_tools: bool = True
    context_role: str = "user"  # openai_chat: "system" for OpenAI itself, "user" for DeepSeek & co.


@dataclass
class Layout:
    protocol: str
    turns_key: str  # "messages" | "input" | "contents"
    tail_start: int  # index in the turns list where the tail starts (after any inserted context turn)
    stable_end: int  # number of turns before the tail or the inserted context turn
    prefix_hash: str  # template identity: tools, system and schema, after the rewrite
    conversation_hash: str  # template + first conversation turn: the same for every turn of a session
    context_index: int | None = None  # index of the inserted context turn
    history: bool = False  # conversation turns (not only instructions) precede the tail
    moved: list[Moved] = field(default_factory=list)
    tools_sorted: bool = False
    tools_unsorted_kept: str | None = None  # why the tool order was left as is
    schemas_canonicalized: int = 0
    skipped: str | None = None  # why the body was left untouched

    def record(self) -> dict[str, Any]:
        """The usage record's `rewrite` entry (no prompt text)."""
        out: dict[str, Any] = {
            "prefix_hash": self.prefix_hash,
            "moved": [m.summary() for m in self.moved],
            "tools_sorted": self.tools_sorted,
            "schemas_canonicalized": self.schemas_canonicalized,
        }
        if self.tools_unsorted_kept:
            out["tools_unsorted_kept"] = self.tools_unsorted_kept
        if self.skipped:
            out["skipped"] = self.skipped
        return out


def rewrite_schemas(items: list[Any], mover: Mover, lay: Layout,
                    where_of: Callable[[int, dict[str, Any]], str]) -> list[Any]:
    """Tool (or function-declaration) objects with their keys in canonical order and volatile spans
    moved out of their descriptions; `where_of(index, item)` names each item in `Moved.where`, the
    one part that differs per protocol. Non-objects pass through untouched: the rewrite changes
    nothing it does not understand."""
    out: list[Any] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            out.append(item)
            continue
        if not is_canonical(item):
            lay.schemas_canonicalized += 1
            item = canonical(item)
        out.append(rewrite_description(item, mover, where_of(i, item)))
    return out


def insert_context(lay: Layout, turns: list[Any], tail: int, mover: Mover,
                   context_turn: Callable[[str, RewriteOptions], Any], options: RewriteOptions,
                   history: bool) -> None:
    """The common end of every `rewrite()`: insert the context turn (if anything moved) at `tail`,
    in place in `turns`, and record where everything ended up in `lay`. The caller computes the
    hashes first, since they describe the turns without the context turn."""
    block = mover.context_block()
    if block is not None:
        turns.insert(tail, context_turn(block, options))
        lay.context_index = tail
    lay.stable_end = tail
    lay.history = history
    lay.tail_start = tail + (1 if block is not None else 0)
    lay.moved = list(mover.moved)


def text_of(content: Any) -> str:
    """Plain text of a message content (string, or a list of parts with `text`), for hashing."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)
