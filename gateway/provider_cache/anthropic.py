"""Anthropic `cache_control` breakpoints, placed by the gateway.

Candidates, in order of value: the end of the stable conversation (the newest turn before the
context block or the final user turn, so the next request of an append-only conversation reads all
of it through the lookback), a bridge at the previous request's marker when the conversation grew
by more than the lookback since (reads look back 20 positions from each breakpoint; a run of
consecutive `tool_use` or `tool_result` blocks is one position), the end of `system` (shared by
every session of a template), the end of `tools`. A candidate is dropped when its prefix is under
the model's minimum, when the break-even says no write pays at either TTL, or when no slot is left:
at most 4 markers in all, counting the client's own (a top-level `cache_control` uses one). Client
markers stay where they are. TTL: the policy's, or per candidate the one with the lowest cost per
use (5m write 1.25×, 1h write 2×, read 0.1×), with the family's observed re-use once it has any
(`outcomes.py`); then longer TTLs are made to precede shorter ones, as the API requires.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.accounting.breakeven import Decision, best, decide, expected_reuses_keepalive
from gateway.provider_cache.outcomes import Evidence
from gateway.provider_cache.stats import PrefixStats
from gateway.provider_cache.tables import CachePrices
from gateway.provider_cache.tokens import TokenCounter

MAX_MARKERS = 4
LOOKBACK = 20
TTL_S = {"5m": 300.0, "1h": 3600.0}
TTL_KIND = {"5m": "short", "1h": "long"}
PRIOR_REUSES = 1.0  # before any re-use was seen: one more request of the same prefix is assumed
_INELIGIBLE = frozenset({"thinking", "redacted_thinking"})


@dataclass(slots=True)
class Block:
    where: tuple[str, int, int]  # ("tools", i, -1) | ("system", j, -1) | ("messages", i, j)
    tokens: int
    eligible: bool
    client_ttl: str | None = None
    run: str | None = None  # "tool_use" | "tool_result": a run of one kind is one lookback position


@dataclass
class Placement:
    decision: str  # metrics label
    prefix_tokens: int
    min_tokens: int
    client_markers: int
    markers: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        return {"decision": self.decision, "prefix_tokens": self.prefix_tokens, "min_tokens": self.min_tokens,
                "client_markers": self.client_markers, "markers": self.markers, "skipped": self.skipped}


def _canon(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()


def _block_tokens(block: Any, counter: TokenCounter) -> tuple[int, bool]:
    if isinstance(block, str):
        return counter.count(block), bool(block)
    if not isinstance(block, dict):
        return 0, False
    kind = block.get("type")
    if kind == "text":
        text = block.get("text") or ""
        return counter.count(text), bool(text)
    if kind in _INELIGIBLE:
        return counter.count(str(block.get("thinking") or block.get("data") or "")), False
    if kind == "image":
        return 1000, True
    if kind == "document":
        return 1500, True
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
        return counter.count(str(content or "")), True
    return counter.count(_canon({k: v for k, v in block.items() if k != "cache_control"})), True


def _ttl(cc: Any) -> str:
    return cc.get("ttl", "5m") if isinstance(cc, dict) and cc.get("ttl") in TTL_S else "5m"


def flatten(body: dict[str, Any], counter: TokenCounter, stable_end: int) -> tuple[list[Block], int]:
    """Blocks in cache order (tools, system, messages) with token counts; messages are counted up to
    `stable_end` only (the rest is never a candidate), but every client marker is seen. Returns the
    blocks and the number of client markers (a top-level `cache_control` counts as one)."""
    blocks: list[Block] = []
    client = 1 if body.get("cache_control") is not None else 0
    for i, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, dict):
            cc = tool.get("cache_control")
            client += cc is not None
            blocks.append(Block(("tools", i, -1), counter.count(_canon({k: v for k, v in tool.items()
                                                                         if k != "cache_control"})),
                                True, _ttl(cc) if cc is not None else None))
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append(Block(("system", 0, -1), counter.count(system), True))
    elif isinstance(system, list):
        for j, b in enumerate(system):
            n, ok = _block_tokens(b, counter)
            cc = b.get("cache_control") if isinstance(b, dict) else None
            client += cc is not None
            blocks.append(Block(("system", j, -1), n, ok, _ttl(cc) if cc is not None else None))
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content") if isinstance(m, dict) else None
        parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        for j, b in enumerate(parts):
            cc = b.get("cache_control") if isinstance(b, dict) else None
            client += cc is not None
            if i < stable_end:
                n, ok = _block_tokens(b, counter)
                kind = b.get("type") if isinstance(b, dict) else None
                blocks.append(Block(("messages", i, j), n, ok, _ttl(cc) if cc is not None else None,
                                    kind if kind in ("tool_use", "tool_result") else None))
            elif cc is not None:
                blocks.append(Block(("messages", i, j), 0, True, _ttl(cc)))
    return blocks, client


def positions_between(blocks: list[Block], earlier: int, later: int) -> int:
    """Lookback positions from block `later` back to block `earlier` (1: the same position)."""
    positions, previous = 0, None
    for i in range(later, earlier - 1, -1):
        run = blocks[i].run
        if run is None or run != previous:
            positions += 1
        previous = run
    return positions


def _candidates(blocks: list[Block], stable_end: int, previous_marker: int | None = None) -> list[tuple[str, int]]:
    """(name, block index) of our candidate positions, most valuable first."""
    out: list[tuple[str, int]] = []
    stable = [k for k, b in enumerate(blocks) if b.where[0] != "messages" or b.where[1] < stable_end]
    turn = next((k for k in reversed(stable) if blocks[k].where[0] == "messages" and blocks[k].eligible), None)
    if turn is not None:
        out.append(("turn", turn))
        if previous_marker is not None and previous_marker < turn and blocks[previous_marker].eligible \
                and positions_between(blocks, previous_marker, turn) > LOOKBACK:
            out.append(("bridge", previous_marker))
    system = next((k for k in reversed(stable) if blocks[k].where[0] == "system" and blocks[k].eligible), None)
    if system is not None:
        out.append(("system", system))
    tools = next((k for k in reversed(stable) if blocks[k].where[0] == "tools"), None)
    if tools is not None:
        out.append(("tools", tools))
    return out


def choose_ttl(policy_ttl: str, prices: CachePrices, stats: PrefixStats,
               evidence: Evidence | None = None) -> tuple[str | None, dict[str, Decision]]:
    """The TTL with the lowest cost per use among those that pay. N − 1 is the family's observed reads
    per write at that TTL once there is evidence, else the prior from the re-use interval."""
    options: dict[str, Decision] = {}
    for ttl in (("5m", "1h") if policy_ttl == "auto" else (policy_ttl,)):
        observed = evidence.observed_reuses(TTL_KIND[ttl]) if evidence is not None else None
        reuses = observed if observed is not None else expected_reuses_keepalive(
            stats.count, stats.interval_s, TTL_S[ttl], PRIOR_REUSES)
        write = prices.write if ttl == "5m" else prices.write_long
        options[ttl] = decide(write, prices.read, prices.input, reuses)
    chosen = best(options)
    return (chosen[0] if chosen else None), options


def _order_ttls(chosen: dict[int, str], blocks: list[Block]) -> dict[int, str]:
    """Longer TTLs must come first: a marker before a 1h marker becomes 1h; ours that would sit
    after a client 5m marker and before a client 1h one cannot be placed."""
    client = {k: b.client_ttl for k, b in enumerate(blocks) if b.client_ttl is not None}
    out = dict(chosen)
    for k in sorted(out, reverse=True):
        later = [t for p, t in {**client, **out}.items() if p > k]
        if "1h" in later:
            out[k] = "1h"
    for k in list(out):
        if out[k] == "1h" and any(t == "5m" for p, t in client.items() if p < k):
            del out[k]
    return out


def place(body: dict[str, Any], stable_end: int, model_min: int, policy_ttl: str, prices: CachePrices,
          template: PrefixStats, conversation: PrefixStats, counter: TokenCounter,
          evidence: Evidence | None = None) -> tuple[dict[str, Any], Placement]:
    blocks, client = flatten(body, counter, stable_end)
    cum: list[int] = []
    total = 0
    for b in blocks:
        total += b.tokens
        cum.append(total)
    cands = _candidates(blocks, stable_end, conversation.marker)
    prefix_tokens = cum[cands[0][1]] if cands else 0
    plan = Placement("none", prefix_tokens, model_min, client)
    if not cands:
        plan.decision = "skip_empty"
        return body, plan
    if prefix_tokens < model_min:
        plan.decision = "skip_min"
        return body, plan
    slots = MAX_MARKERS - client
    chosen: dict[int, str] = {}
    info: dict[int, dict[str, Any]] = {}
    for name, k in cands:
        if blocks[k].client_ttl is not None:
            plan.skipped.append({"at": name, "reason": "client marker"})
            continue
        if cum[k] < model_min:
            plan.skipped.append({"at": name, "reason": "under minimum", "tokens": cum[k]})
            continue
        if len(chosen) >= slots:
            plan.skipped.append({"at": name, "reason": "no slot left"})
            continue
        stats = conversation if name in ("turn", "bridge") else template
        ttl, options = choose_ttl(policy_ttl, prices, stats, evidence)
        if ttl is None:
            plan.skipped.append({"at": name, "reason": "break-even", "options": {t: d.as_record()
                                                                                 for t, d in options.items()}})
            continue
        chosen[k] = ttl
        info[k] = {"at": name, "block": k, "tokens": cum[k], "stats": stats.as_record(),
                   "breakeven": options[ttl].as_record()}
    ordered = _order_ttls(chosen, blocks)
    out = body
    for k, ttl in sorted(ordered.items()):
        out = _mark(out, blocks[k].where, ttl)
        plan.markers.append({**info[k], "ttl": ttl})
    ttls = sorted({m["ttl"] for m in plan.markers})
    if plan.markers:
        plan.decision = "cache_" + ttls[0] if len(ttls) == 1 else "cache_mixed"
    elif slots <= 0:
        plan.decision = "skip_slots"
    else:
        plan.decision = "skip_breakeven" if any(s["reason"] == "break-even" for s in plan.skipped) else "skip_client"
    return out, plan


def _cc(ttl: str) -> dict[str, str]:
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}


def _mark(body: dict[str, Any], where: tuple[str, int, int], ttl: str) -> dict[str, Any]:
    """A copy of `body` with a marker on one block; only the containers on the way are copied."""
    part, i, j = where
    out = dict(body)
    if part == "tools":
        tools = list(body["tools"])
        tools[i] = {**tools[i], "cache_control": _cc(ttl)}
        out["tools"] = tools
    elif part == "system":
        system = body["system"]
        if isinstance(system, str):
            out["system"] = [{"type": "text", "text": system, "cache_control": _cc(ttl)}]
        else:
            blocks = list(system)
            blocks[i] = {**blocks[i], "cache_control": _cc(ttl)}
            out["system"] = blocks
    else:
        messages = list(body["messages"])
        message = dict(messages[i])
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        parts[j] = {**parts[j], "cache_control": _cc(ttl)}
        message["content"] = parts
        messages[i] = message
        out["messages"] = messages
    return out
