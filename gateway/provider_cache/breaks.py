"""Why a prompt missed the provider cache: its block chain against the conversation's previous one.

The previous request is the same `x-gateway-session`'s, else the same tenant and template's, else
the tenant's recent request sharing the longest prefix (found through checkpoint keys: the chain
hash after pieces 1, 2, 4, 8, … of every request, each naming the request). Its chain, the prompt
tokens the vendor reported for it and its vendor response id live in the shared store for the
session's TTL; no prompt text is ever stored.

The first piece that differs names the part and the cause: `model_changed`, `tools_changed`,
`system_changed`, `history_edited` (an earlier turn changed or was removed; `message_index` is the
first such turn in the client's messages); `volatile_value` when that piece is equal to the
previous one once dates, times and ids are masked as the rewrite layer detects them; `expired` when
the whole previous prompt matched but the vendor reported no cached token (known only once the
vendor answered). `tokens_lost` is the previous prompt's tokens that the vendor can no longer serve
(all of them when the common prefix is under the model's minimum); `cost_lost_usd` prices them at
the input price less the cache-read price.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import xxhash

from gateway.accounting.normalize import NormalizedUsage, expected_dialect, normalize
from gateway.provider_cache.family import mask
from gateway.provider_cache.prefix import PARTS, Blocks, common_pieces, dump, turn_layout
from gateway.provider_cache.tables import gemini_implicit
from gateway.rewrite.detect import VolatileDetector
from gateway.stores.base import KVStore, StoreUnavailable

if TYPE_CHECKING:
    from gateway.context import RequestContext

log = logging.getLogger("gateway.provider_cache")

CAUSES = ("model_changed", "tools_changed", "system_changed", "history_edited", "volatile_value", "expired")
_PART_CAUSE = ("model_changed", "tools_changed", "system_changed", "history_edited")
MASKED_TURNS = 2  # turns whose masked hashes are kept (where the rewrite looks: the first user turn)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def session_key(tenant: str, session: str) -> str:
    return f"gw:px:{{{tenant}}}:s:{_digest(session)}"


def template_key(tenant: str, template: str) -> str:
    return f"gw:px:{{{tenant}}}:t:{_digest(template)}"


INLINE_MAX = 1024  # bytes of a previous request's record kept whole in its checkpoint keys


def request_key(tenant: str, request_id: str) -> str:
    return f"gw:px:{{{tenant}}}:r:{request_id}"


def checkpoint_key(tenant: str, blocks: Blocks, i: int) -> str:
    return f"gw:px:{{{tenant}}}:c:{blocks.hashes[i]:016x}:{blocks.ends[i]}"


def checkpoints(n: int) -> list[int]:
    """Piece indices 0, 1, 3, 7, … below n: log-spaced, so a lookup is O(log pieces) keys."""
    out, i = [], 1
    while i - 1 < n:
        out.append(i - 1)
        i *= 2
    return out


_MASKED_MAX = 8192  # masked hashes remembered (~100 bytes each): the turns and parts of recent requests
_masked: dict[tuple[VolatileDetector, bytes], int] = {}


def masked_crc(piece: bytes, detector: VolatileDetector) -> int:
    """The piece's hash with its volatile values masked. Remembered by the piece's own 128-bit hash:
    the detector's regexes cost ~0.1 ms even on a sentence, and a conversation sends the same turns
    and instructions again with every request (and one request masks its first turn twice: when it
    is compared, and when it is kept for the next request). Only hashes are kept, never text."""
    key = (detector, xxhash.xxh3_128_digest(piece))
    found = _masked.get(key)
    if found is None:
        masked = mask(piece.decode("utf-8", "ignore"), detector)
        found = xxhash.xxh3_64_intdigest(masked.encode("utf-8", "surrogatepass"))
        if len(_masked) >= _MASKED_MAX:  # FIFO: a conversation's pieces come straight back
            del _masked[next(iter(_masked))]
        _masked[key] = found
    return found


@dataclass(slots=True)
class Previous:
    request_id: str
    model: str
    tokens: int  # prompt tokens the vendor reported
    hashes: list[int]
    ends: list[int]
    parts: list[int]
    turn_ends: list[int] = field(default_factory=list)  # byte offset where each turn ends
    turn_crcs: list[int] = field(default_factory=list)  # hash of each turn
    turn_index: list[int] = field(default_factory=list)  # each turn's index in the body's turn list
    masked: dict[int, int] = field(default_factory=dict)  # template piece index -> hash, volatile values masked
    masked_turns: list[int] = field(default_factory=list)  # the first turns' hashes, volatile values masked
    tools_set: int | None = None  # hash of the tools in name order (a reorder keeps it)
    vendor_id: str | None = None

    @property
    def size(self) -> int:
        return self.ends[-1] if self.ends else 0

    def tokens_at(self, pieces: int) -> int:
        """Prompt tokens in the first `pieces` pieces (bytes mapped to the reported tokens)."""
        if pieces <= 0 or not self.size:
            return 0
        return round(self.ends[min(pieces, len(self.ends)) - 1] * self.tokens / self.size)

    def dumps(self) -> bytes:
        return orjson.dumps({"id": self.request_id, "m": self.model, "t": self.tokens, "h": self.hashes,
                             "e": self.ends, "p": self.parts, "te": self.turn_ends, "tc": self.turn_crcs,
                             "ti": self.turn_index, "k": [[i, c] for i, c in self.masked.items()],
                             "kt": self.masked_turns, "ts": self.tools_set, "v": self.vendor_id})

    @classmethod
    def loads(cls, raw: bytes) -> Previous | None:
        try:
            d = orjson.loads(raw)
            return cls(str(d["id"]), str(d["m"]), int(d["t"]), list(d["h"]), list(d["e"]), list(d["p"]),
                       list(d["te"]), list(d["tc"]), list(d["ti"]), {int(i): int(c) for i, c in d.get("k") or []},
                       list(d.get("kt") or []), d.get("ts"), d.get("v"))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


@dataclass
class PrefixCheck:
    """One request's comparison, from `before()` (what the prompt broke) to `after()` (the vendor's
    cached tokens: `expired`, and the vendor's own diagnostics)."""

    blocks: Blocks
    previous: Previous | None
    common: int  # pieces shared with the previous request
    break_: dict[str, Any] | None
    minimum: int  # the model's minimum cacheable tokens
    loss_rate: float = 0.0  # USD per token lost: input − cache-read price (set before the record is built)
    vendor: dict[str, Any] | None = None

    @property
    def common_tokens(self) -> int:
        return self.previous.tokens_at(self.common) if self.previous is not None else 0

    def expired(self, usage: NormalizedUsage | None, eligible: bool) -> dict[str, Any] | None:
        """The `expired` break: the whole previous prompt matched, the vendor read none of it (only
        for a request the vendor would cache at all: `eligible`)."""
        if (self.break_ is not None or self.previous is None or usage is None or not eligible
                or usage.input_tokens == 0 or usage.cached_input_tokens > 0 or self.common_tokens < self.minimum):
            return None
        return {"part": PARTS[self.previous.parts[self.common - 1]], "cause": "expired", "message_index": None,
                "tokens_lost": self.common_tokens}

    def final_break(self, ctx: RequestContext) -> dict[str, Any] | None:
        if self.break_ is not None:
            return self.break_
        return self.expired(answer_usage(ctx), cache_requested(ctx))

    def header(self, ctx: RequestContext) -> str | None:
        """The `x-gateway-prefix-break` value once the answer is in (`expired` needs its usage)."""
        brk = self.final_break(ctx)
        return brk["cause"] if brk is not None else None

    def record(self, ctx: RequestContext) -> dict[str, Any]:
        brk = self.final_break(ctx)
        if brk is not None:  # priced here, off the request path
            brk = {**brk, "cost_lost_usd": round(brk["tokens_lost"] * self.loss_rate, 8)}
        out: dict[str, Any] = {"previous_request_id": self.previous.request_id if self.previous else None,
                               "common_tokens": self.common_tokens, "break": brk}
        if self.vendor is not None:
            out["vendor"] = self.vendor
        return out


def cache_requested(ctx: RequestContext) -> bool:
    """Whether the vendor caches this request at all: Anthropic only at markers, Gemini implicitly
    from 2.5 (or a CachedContent), GPT-5.6+ not in explicit mode without breakpoints; the others
    (OpenAI, DeepSeek, vLLM) always."""
    body = ctx.upstream_body
    if ctx.provider == "anthropic":
        return b"cache_control" in orjson.dumps(body)
    if ctx.provider == "gemini":
        return bool(body.get("cachedContent")) or gemini_implicit(ctx.model)
    options = body.get("prompt_cache_options")
    if isinstance(options, dict) and options.get("mode") == "explicit":
        return b"prompt_cache_breakpoint" in orjson.dumps(body)
    return True


def answer_usage(ctx: RequestContext) -> NormalizedUsage | None:
    """The upstream answer's usage, normalized (None: no upstream answer)."""
    if ctx.answer is None or ctx.answered_by != "upstream" or not ctx.answer.usage_raw:
        return None
    return normalize(expected_dialect(ctx), ctx.answer.usage_raw)


def classify(blocks: Blocks, previous: Previous, detector: VolatileDetector, minimum: int, turn_offset: int,
             context_turn: int | None, tools_set: Any) -> tuple[int, dict[str, Any] | None]:
    """(pieces in common, the break or None) of `blocks` against `previous`."""
    common = common_pieces(blocks, previous.hashes, previous.ends)
    if common >= len(previous.hashes):
        return common, None  # the previous prompt is a prefix of this one: append-only
    part = previous.parts[common]
    brk: dict[str, Any] = {"part": PARTS[part], "cause": _PART_CAUSE[part], "message_index": None}
    if part == 3:
        turn, volatile = _first_turn_edited(blocks, previous, common, detector)
        index = turn
        if context_turn is not None and index > context_turn:
            index -= 1
        brk["message_index"] = index + turn_offset
        if volatile:
            brk["cause"] = "volatile_value"
    elif part != 0 and common in previous.masked and common < len(blocks.pieces) and \
            masked_crc(blocks.pieces[common], detector) == previous.masked[common]:
        brk["cause"] = "volatile_value"
    elif part == 1 and previous.tools_set is not None and callable(tools_set) and tools_set() == previous.tools_set:
        brk["reordered"] = True  # the same tools in another order: sorting them would have kept the prefix
    common_tokens = previous.tokens_at(common)
    lost = previous.tokens if common_tokens < minimum else previous.tokens - common_tokens
    brk["tokens_lost"] = max(0, lost)
    return common, brk


def _first_turn_edited(blocks: Blocks, previous: Previous, piece: int, detector: VolatileDetector
                       ) -> tuple[int, bool]:
    """The body index of the first previous turn this request changed or removed (the comparison
    stopped at `piece`, inside the conversation), and whether it differs only in volatile values."""
    start = previous.ends[piece - 1] if piece > 0 else 0
    j = bisect.bisect_right(previous.turn_ends, start)  # turns ending before the piece are unchanged
    _, crcs = turn_layout(blocks, j + 64)  # a stop inside a piece lies within its few turns
    while j < len(previous.turn_crcs) and j < len(crcs) and crcs[j] == previous.turn_crcs[j]:
        j += 1
    if j >= len(previous.turn_index):
        return (previous.turn_index[-1] if previous.turn_index else 0), False
    volatile = j < len(previous.masked_turns) and j < len(blocks.turns) and \
        masked_crc(dump(blocks.turns[j]), detector) == previous.masked_turns[j]
    return previous.turn_index[j], volatile


def _model_of(blocks: Blocks) -> str:
    return blocks.pieces[0].decode("utf-8", "replace") if blocks.pieces else ""


def to_previous(request_id: str, blocks: Blocks, tokens: int, detector: VolatileDetector,
                tools_set: int | None, vendor_id: str | None) -> Previous:
    """What the next request of the conversation compares with; masked hashes for the template
    parts and the first turns (where volatile values sit)."""
    masked = {i: masked_crc(blocks.pieces[i], detector) for i, part in enumerate(blocks.parts) if part in (1, 2)}
    ends, crcs = turn_layout(blocks)
    masked_turns = [masked_crc(dump(t), detector) for t in blocks.turns[:MASKED_TURNS]]
    return Previous(request_id, _model_of(blocks), tokens, list(blocks.hashes), list(blocks.ends),
                    list(blocks.parts), ends, crcs, list(blocks.turn_index), masked, masked_turns, tools_set,
                    vendor_id)


class BreakStore:
    """Previous requests in the shared store, for the session's TTL."""

    def __init__(self, store: KVStore, ttl_s: float, timeout_s: float = 0.1) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.timeout_s = timeout_s

    async def find(self, tenant: str, session: str | None, template: str | None, blocks: Blocks) -> Previous | None:
        """The conversation's previous request (None: none, or the store did not answer in time)."""
        try:
            async with asyncio.timeout(self.timeout_s):
                if session:
                    raw = await self.store.get(session_key(tenant, session))
                elif template:
                    raw = await self.store.get(template_key(tenant, template))
                else:
                    raw = await self._longest(tenant, blocks)
        except (StoreUnavailable, TimeoutError) as exc:
            log.debug("previous prompt unavailable", extra={"error": repr(exc)})
            return None
        return Previous.loads(raw) if raw is not None else None

    async def _longest(self, tenant: str, blocks: Blocks) -> bytes | None:
        marks = checkpoints(len(blocks.hashes))
        found = await self.store.get_many([checkpoint_key(tenant, blocks, i) for i in marks])
        deepest = next((v for v in reversed(found) if v is not None), None)
        if deepest is None:
            return None
        if deepest.startswith(b"{"):  # the record itself, kept inline (small): no second round trip
            return deepest
        return await self.store.get(request_key(tenant, deepest.decode()))

    async def save(self, tenant: str, session: str | None, template: str | None, blocks: Blocks,
                   prev: Previous) -> None:
        """Keep `prev` for the next request (from the stage's `after()`, off the request path)."""
        raw = prev.dumps()
        try:
            if session:
                await self.store.set(session_key(tenant, session), raw, ttl=self.ttl_s)
            elif template:
                await self.store.set(template_key(tenant, template), raw, ttl=self.ttl_s)
            else:
                # A small record goes in its checkpoints whole (a JSON object; a request id never
                # starts with "{"), so the lookup is one round trip; a large one is pointed at by id.
                rid = raw if len(raw) <= INLINE_MAX else prev.request_id.encode()
                # The request first: a checkpoint must never point at a request not yet stored (one
                # round trip, in order).
                await self.store.set_many([(request_key(tenant, prev.request_id), raw)]
                                          + [(checkpoint_key(tenant, blocks, i), rid)
                                             for i in checkpoints(len(blocks.hashes))], ttl=self.ttl_s)
        except StoreUnavailable:
            pass
