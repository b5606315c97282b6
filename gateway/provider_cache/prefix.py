"""The rendered prompt as a chain of block hashes, in the vendor's cache order.

A vendor's prefix cache serves a prompt up to the first byte that differs from what it cached, so
finding where two prompts part is a matter of comparing prefixes. Comparing texts would cost a diff
per request; comparing chained block hashes (as vLLM keys its KV blocks) costs one pass of a fast
checksum and a walk over a few dozen integers.

The prompt is rendered in the order the vendors cache it — the model, the tools (and the
structured-output schema), the system/developer instructions, then the conversation turns — each
part serialized to JSON once, without the cache hints (`cache_control`, `prompt_cache_breakpoint`:
markers move between requests without changing the prompt). The tools
and instructions are cut into pieces of about PIECE bytes at a content boundary (a newline, a
sentence end, a comma), so an edit that changes a value's length moves no later boundary of its
piece and the piece can be compared with its volatile values masked; the turns are cut into fixed
pieces of TURN_PIECE bytes, and which turn a piece falls in is worked out only when a comparison
stops in one (`turn_layout`). The chain `h_k = xxh3(piece_k, seed = h_{k−1})` names the whole prefix
up to each piece (xxh3: ~3 µs for a 30k-token prompt, where crc32 took ~50 µs). Tokens are never
counted here: the vendor reports the prompt's tokens, and a prefix of b bytes is b × (tokens ÷
bytes) of them (`breaks.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import xxhash

PIECE = 4096  # bytes (~1k tokens) in the template parts; vendors cache at block granularity anyway
TURN_PIECE = 16384  # bytes in the conversation (the turn a comparison stops in is found separately)
_DELIMITERS = (b"\n", b"\\n", b". ", b",")
_SYSTEM_ROLES = frozenset({"system", "developer"})
PARTS = ("model", "tools", "system", "messages")


@dataclass(slots=True)
class Blocks:
    parts: list[int] = field(default_factory=list)  # index into PARTS, per piece
    ends: list[int] = field(default_factory=list)  # bytes of the prompt up to the end of each piece
    hashes: list[int] = field(default_factory=list)  # chained crc32 up to the end of each piece
    pieces: list[bytes] = field(default_factory=list)  # kept for the request's own lifetime, never stored
    turns: list[Any] = field(default_factory=list)  # the conversation turns, in the chain's order
    turn_index: list[int] = field(default_factory=list)  # each one's index in the body's turn list
    turns_start: int = 0  # byte offset where the conversation starts

    @property
    def size(self) -> int:
        return self.ends[-1] if self.ends else 0


_HINT_KEYS = ("cache_control", "prompt_cache_breakpoint")


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in _HINT_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _marked_parts(content: Any) -> bool:
    if type(content) is not list:  # a string content carries no hint
        return False
    for part in content:
        if type(part) is dict and ("cache_control" in part or "prompt_cache_breakpoint" in part):
            return True
    return False


def _marked(item: Any) -> bool:
    """Whether an item carries a cache hint where the vendors take one: on itself (a tool, a system
    block) or on one of its content parts (a turn's blocks)."""
    if type(item) is not dict:
        return False
    return "cache_control" in item or "prompt_cache_breakpoint" in item or _marked_parts(item.get("content"))


def clean(value: Any) -> Any:
    """`value` without cache hints (the same object when it has none: the common case costs a walk over
    the items, never a copy or a scan of the serialized bytes)."""
    if type(value) is list:
        for v in value:
            if _marked(v):
                return [_strip(v) if _marked(v) else v for v in value]
        return value
    return _strip(value) if _marked(value) else value


def _clean_turns(turns: list[Any]) -> list[Any]:
    """Turns without cache hints: the vendors take them on content parts only, so a turn whose
    content is a string (most of a long conversation) costs one lookup."""
    for t in turns:
        if type(t) is dict and _marked_parts(t.get("content")):
            return [_strip(x) if type(x) is dict and _marked_parts(x.get("content")) else x for x in turns]
    return turns


def dump(value: Any) -> bytes:
    """JSON bytes of a value without the cache hints (only what a vendor's cache key sees)."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return orjson.dumps(clean(value))


def _cut(raw: bytes, start: int) -> int:
    """End of the piece that starts at `start`: the first boundary after PIECE bytes."""
    if len(raw) - start <= 2 * PIECE:
        return len(raw)
    for d in _DELIMITERS:
        stop = raw.find(d, start + PIECE, start + 2 * PIECE)
        if stop >= 0:
            return stop + len(d)
    return start + 2 * PIECE


def _add(out: Blocks, part: int, raw: bytes) -> None:
    if not raw:
        return
    h = out.hashes[-1] if out.hashes else 0
    end = out.ends[-1] if out.ends else 0
    start, n = 0, len(raw)
    fixed = part == 3
    while start < n:
        stop = min(n, start + TURN_PIECE) if fixed else _cut(raw, start)
        piece = raw[start:stop]
        h = xxhash.xxh3_64_intdigest(piece, h)
        end += stop - start
        out.parts.append(part)
        out.ends.append(end)
        out.hashes.append(h)
        out.pieces.append(piece)
        start = stop


def _layout(protocol: str, body: dict[str, Any]) -> tuple[list[Any], list[Any], Any]:
    """(tools parts, system parts, turns) of a native body."""
    if protocol == "anthropic_messages":
        return [body.get("tools")], [body.get("system")], body.get("messages")
    if protocol == "gemini":
        return ([body.get("tools"), body.get("toolConfig")], [body.get("systemInstruction"), body.get("cachedContent")],
                body.get("contents"))
    if protocol == "openai_responses":
        text: dict[str, Any] = body["text"] if isinstance(body.get("text"), dict) else {}
        turns = body.get("input")
        return ([body.get("tools"), text.get("format")], [body.get("instructions")],
                [{"role": "user", "content": turns}] if isinstance(turns, str) else turns)
    return [body.get("tools"), body.get("response_format")], [], body.get("messages")


def render(protocol: str, model: str, body: dict[str, Any], skip_turn: int | None = None) -> Blocks:
    """The block chain of a native body (`skip_turn`: a turn the gateway inserted, e.g. the rewrite's
    context block, which is not the client's prompt)."""
    out = Blocks()
    tools, system, turns = _layout(protocol, body)
    turns = turns if isinstance(turns, list) else []
    first = 0
    if protocol in ("openai_chat", "openai_responses"):  # OpenAI keeps its instructions among the turns
        while first < len(turns) and isinstance(turns[first], dict) and turns[first].get("role") in _SYSTEM_ROLES:
            first += 1
        system = [*system, *turns[:first]]
    out.turn_index = [i for i in range(first, len(turns)) if i != skip_turn]
    out.turns = [turns[i] for i in out.turn_index]
    _add(out, 0, model.encode())
    _add(out, 1, b"".join(dump(t) for t in tools if t))
    _add(out, 2, b"".join(dump(s) for s in system if s))
    out.turns_start = out.size
    # without the closing bracket: a conversation that only grew then starts with the bytes of the last one
    _add(out, 3, orjson.dumps(_clean_turns(out.turns))[:-1] if out.turns else b"")
    return out


def turn_layout(blocks: Blocks, upto: int | None = None) -> tuple[list[int], list[int]]:
    """(end offset, hash) of each turn, as `render` laid them out (orjson writes a list as `[` + items
    joined by `,` + `]`); the first `upto` turns only. Costs one serialization per turn: used after the
    response, and on the request path only for a comparison that stopped inside the conversation."""
    ends, crcs = [], []
    at = blocks.turns_start + 1
    for turn in blocks.turns[:upto]:
        raw = dump(turn)
        at += len(raw)
        ends.append(at)
        crcs.append(xxhash.xxh3_64_intdigest(raw))
        at += 1
    return ends, crcs


def common_pieces(blocks: Blocks, hashes: list[int], ends: list[int]) -> int:
    """How many leading pieces of the chain `hashes` (with their `ends`) `blocks` shares. The last one
    counts when `blocks` holds its bytes at the start of a longer piece: a conversation that only grew
    fills the piece its previous request ended in."""
    a = blocks.hashes
    n = min(len(a), len(hashes))
    i = 0
    while i < n and a[i] == hashes[i]:
        i += 1
    if i == len(hashes) - 1 and i < len(a):
        size = ends[i] - (ends[i - 1] if i else 0)
        piece = blocks.pieces[i]
        if len(piece) > size and xxhash.xxh3_64_intdigest(piece[:size], hashes[i - 1] if i else 0) == hashes[i]:
            i += 1
    return i
