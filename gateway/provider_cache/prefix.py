"""The rendered prompt as a chain of block hashes, in the vendor's cache order.

A vendor's prefix cache serves a prompt up to the first byte that differs from what it cached, so
finding where two prompts part is a matter of comparing prefixes. Comparing texts would cost a diff
per request; comparing chained block hashes (as vLLM keys its KV blocks) costs one pass of a fast
checksum and a walk over a few dozen integers.

The prompt is rendered in the order the vendors cache it — the model, the tools (and the
structured-output schema), the system/developer instructions, then the conversation turns one by
one — each part serialized to JSON with the cache hints removed (`cache_control`,
`prompt_cache_breakpoint`: markers move between requests without changing the prompt). Each part is
cut into pieces of about PIECE bytes at a content boundary (a newline, escaped or not, a sentence
end, a comma), so an edit that changes a value's length moves no later boundary of its piece, and the
chain `h_k = crc32(piece_k, h_{k−1})` names the whole prefix up to each piece. Tokens are never
counted here: the vendor reports the prompt's tokens, and a prefix of b bytes is b × (tokens ÷
bytes) of them (`breaks.py`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson

PIECE = 2048  # bytes: ~500 tokens; vendors cache at block granularity anyway (OpenAI 128, Anthropic a block)
_DELIMITERS = (b"\n", b"\\n", b". ", b",")
_HINTS = (b"cache_control", b"prompt_cache_breakpoint")
_SYSTEM_ROLES = frozenset({"system", "developer"})
PARTS = ("model", "tools", "system", "messages")


@dataclass(slots=True)
class Blocks:
    parts: list[int] = field(default_factory=list)  # index into PARTS, per piece
    turns: list[int] = field(default_factory=list)  # the piece's turn index in the body's turns (-1: not a turn)
    ends: list[int] = field(default_factory=list)  # bytes of the prompt up to the end of each piece
    hashes: list[int] = field(default_factory=list)  # chained crc32 up to the end of each piece
    pieces: list[bytes] = field(default_factory=list)  # kept for the request's own lifetime, never stored
    turn_count: int = 0

    @property
    def size(self) -> int:
        return self.ends[-1] if self.ends else 0


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("cache_control", "prompt_cache_breakpoint")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _dump(obj: Any) -> bytes:
    raw = orjson.dumps(obj)
    if any(h in raw for h in _HINTS):  # rare: re-serialize without the hints
        raw = orjson.dumps(_strip(obj))
    return raw


def _add(out: Blocks, part: int, turn: int, raw: bytes) -> None:
    h = out.hashes[-1] if out.hashes else 0
    end = out.ends[-1] if out.ends else 0
    start, n = 0, len(raw)
    while start < n:
        stop = n
        if n - start > 2 * PIECE:
            stop = -1
            for d in _DELIMITERS:
                stop = raw.find(d, start + PIECE, start + 2 * PIECE)
                if stop >= 0:
                    stop += len(d)
                    break
            if stop < 0:
                stop = start + 2 * PIECE
        piece = raw[start:stop]
        h = zlib.crc32(piece, h)
        end += len(piece)
        out.parts.append(part)
        out.turns.append(turn)
        out.ends.append(end)
        out.hashes.append(h)
        out.pieces.append(piece)
        start = stop


def _segments(protocol: str, model: str, body: dict[str, Any], skip_turn: int | None
              ) -> tuple[list[tuple[int, int, Any]], int]:
    """(part, turn index, value) in cache order, and the number of turns."""
    segs: list[tuple[int, int, Any]] = [(0, -1, model)]
    turns: Any
    if protocol == "anthropic_messages":
        tools: list[Any] = [body.get("tools")]
        system: list[Any] = [body.get("system")]
        turns = body.get("messages")
    elif protocol == "gemini":
        tools = [body.get("tools"), body.get("toolConfig")]
        system = [body.get("systemInstruction"), body.get("cachedContent")]
        turns = body.get("contents")
    elif protocol == "openai_responses":
        text = body.get("text") if isinstance(body.get("text"), dict) else {}
        tools = [body.get("tools"), text.get("format")]
        system = [body.get("instructions")]
        turns = body.get("input")
        if isinstance(turns, str):
            turns = [{"role": "user", "content": turns}]
    else:  # openai_chat and OpenAI-compatible upstreams
        tools = [body.get("tools"), body.get("response_format")]
        system = []
        turns = body.get("messages")
    segs += [(1, -1, t) for t in tools if t]
    segs += [(2, -1, s) for s in system if s]
    turns = turns if isinstance(turns, list) else []
    leading = protocol in ("openai_chat", "openai_responses")
    for i, turn in enumerate(turns):
        if i == skip_turn:
            continue
        is_system = leading and isinstance(turn, dict) and turn.get("role") in _SYSTEM_ROLES
        leading = leading and is_system
        segs.append((2 if is_system else 3, i, turn))
    return segs, len(turns)


def render(protocol: str, model: str, body: dict[str, Any], skip_turn: int | None = None) -> Blocks:
    """The block chain of a native body (`skip_turn`: a turn the gateway inserted, e.g. the rewrite's
    context block, which is not the client's prompt)."""
    out = Blocks()
    segs, out.turn_count = _segments(protocol, model, body, skip_turn)
    for part, turn, value in segs:
        _add(out, part, turn, value.encode() if isinstance(value, str) else _dump(value))
    return out


def common_pieces(a: list[int], b: list[int]) -> int:
    """How many leading pieces two chains share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
