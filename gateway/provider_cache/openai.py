"""OpenAI: `prompt_cache_key`, `prompt_cache_retention`, and GPT-5.6+ explicit breakpoints.

`prompt_cache_key` routes a request to the machines that hold its prefix; the vendor combines it
with a hash of the first tokens and spreads a key past ~15 requests per minute. The gateway
sets it only when the client did not: `gw-` + a hash of (tenant, stable-prefix hash, shard), so one
template keeps one key while its traffic fits one machine, and splits into 2, 4, ... shards — by
session (`x-gateway-session`) or conversation (its first turn) so that a conversation keeps its
shard — as the observed rate of that prefix passes 15, 30, ... per minute. Never one key for every
session of a tenant, and never a key that mixes templates.

`prompt_cache_retention` is set from the policy when the client sent none and the model accepts
the value. GPT-5.6 and later charge 1.25× for writes and take `prompt_cache_breakpoint` markers:
those models get markers at the end of the system messages, at the end of the stable conversation,
and on the turn where the conversation's previous request put its own (a cached prefix is matched
exactly at a breakpoint, so that is what reads it back), when the break-even says the write pays (at most 3 new explicit
ones in the default implicit mode, 4 in explicit mode, counting the client's). Those models also
write at the latest message by themselves in implicit mode: a family whose writes are never read
back (outcomes.py) is sent in explicit mode without breakpoints, which writes nothing.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson

from gateway.accounting.breakeven import decide, expected_reuses_keepalive
from gateway.provider_cache.outcomes import Evidence
from gateway.provider_cache.stats import PrefixStats
from gateway.provider_cache.tables import CachePrices, gpt_breakpoints, openai_retentions
from gateway.provider_cache.tokens import TokenCounter

PER_KEY_RPM = 15.0
MAX_SHARDS = 64
BREAKPOINT_TTL_S = 1800.0  # "30m", the minimum lifetime of a GPT-5.6 cache entry
MIN_TOKENS = 1024
_MARK = {"mode": "explicit"}
_CHAT_PARTS = frozenset({"text", "refusal"})
_RESPONSES_PARTS = frozenset({"input_text"})


def shards_for(stats: PrefixStats) -> int:
    if stats.count < 2 or not stats.interval_s or stats.interval_s <= 0:
        return 1
    rpm = 60.0 / stats.interval_s
    if rpm <= PER_KEY_RPM:
        return 1
    return min(MAX_SHARDS, 2 ** math.ceil(math.log2(rpm / PER_KEY_RPM)))


def shard_of(affinity: str, shards: int) -> int:
    return int(hashlib.sha256(affinity.encode()).hexdigest()[:8], 16) % shards if shards > 1 else 0


def cache_key(tenant: str, prefix_hash: str, affinity: str, shards: int, shard: int | None = None) -> str:
    shard = shard_of(affinity, shards) if shard is None else shard
    digest = hashlib.sha256(f"{tenant}\x1f{prefix_hash}\x1f{shard}".encode()).hexdigest()
    return f"gw-{digest[:32]}"


def set_key_and_retention(body: dict[str, Any], model: str, tenant: str, prefix_hash: str, affinity: str,
                          stats: PrefixStats, key_policy: str, retention_policy: str,
                          conversation: PrefixStats | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Returns the (copied when changed) body and the record entry. A conversation keeps the shard it
    was given on its first turn (`conversation.shard`) while the template's shard count grows: a new
    key mid-conversation is a new cache namespace, and every token of it a miss."""
    out = body
    rec: dict[str, Any] = {}
    key = body.get("prompt_cache_key")
    if isinstance(key, str) and key:
        rec["key"] = "client"
    elif key_policy == "auto":
        shards = shards_for(stats)
        kept = conversation.shard if conversation is not None and conversation.shard is not None else None
        shard = kept if kept is not None and kept < MAX_SHARDS else shard_of(affinity, shards)
        key = cache_key(tenant, prefix_hash, affinity, shards, shard)
        out = {**out, "prompt_cache_key": key}
        rec.update(key="gateway", shards=shards, shard=shard)
    else:
        key = None
        rec["key"] = "off"
    rec["prompt_cache_key"] = key
    retention = body.get("prompt_cache_retention")
    if retention is None and retention_policy != "unset":
        if retention_policy in openai_retentions(model):
            retention = retention_policy
            out = {**out, "prompt_cache_retention": retention}
        else:
            rec["retention_skipped"] = f"{model} does not accept {retention_policy}"
    rec["retention"] = retention
    return out, rec


# ---- GPT-5.6+ breakpoints ------------------------------------------------------------------------


def _canon(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or p.get("refusal") or "") for p in content if isinstance(p, dict))
    return ""


def _count_markers(turns: list[Any]) -> int:
    n = 0
    for t in turns:
        content = t.get("content") if isinstance(t, dict) else None
        if isinstance(content, list):
            n += sum(1 for p in content if isinstance(p, dict) and "prompt_cache_breakpoint" in p)
    return n


def stop_writing(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """GPT-5.6+ in explicit mode with no breakpoint: "the request does not use prompt caching or incur
    cache-write charges". Left alone when the client chose its own options or breakpoints."""
    turns = body.get("messages") if isinstance(body.get("messages"), list) else body.get("input")
    options = body.get("prompt_cache_options")
    if (options is not None and not isinstance(options, dict)) or (isinstance(options, dict) and "mode" in options) \
            or (isinstance(turns, list) and _count_markers(turns)):
        return body, {"decision": "skip_client_options"}
    merged = {**(options or {}), "mode": "explicit"}  # options without a mode: the gateway's diagnostics request
    return {**body, "prompt_cache_options": merged}, {"decision": "skip_unread", "markers": []}


def place_breakpoints(body: dict[str, Any], protocol: str, model: str, stable_end: int, prices: CachePrices,
                      template: PrefixStats, conversation: PrefixStats, counter: TokenCounter,
                      evidence: Evidence | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Markers for GPT-5.6+ (None: not such a model). `stable_end` counts turns before the tail."""
    if not gpt_breakpoints(model):
        return body, None
    turns_key = "messages" if protocol == "openai_chat" else "input"
    turns = body.get(turns_key)
    if not isinstance(turns, list):
        return body, {"decision": "skip_shape"}
    allowed = _CHAT_PARTS if protocol == "openai_chat" else _RESPONSES_PARTS
    options = found if isinstance(found := body.get("prompt_cache_options"), dict) else {}
    slots = (4 if options.get("mode") == "explicit" else 3) - _count_markers(turns)
    # Tokens up to the end of each turn: tools, schema, instructions, then the turns in order.
    total = counter.count(_canon(body.get("tools") or [])) + counter.count(str(body.get("instructions") or ""))
    ends: list[int] = []
    for t in turns:
        if isinstance(t, dict):
            total += counter.count(_text(t.get("content"))) + (counter.count(_canon(t["tool_calls"]))
                                                                if t.get("tool_calls") else 0)
        ends.append(total)
    system_end = 0
    while system_end < min(stable_end, len(turns)) and isinstance(turns[system_end], dict) \
            and turns[system_end].get("role") in ("system", "developer"):
        system_end += 1  # never past the stable part: the rewrite's context block is a system turn too
    # GPT-5.6+ match a cached prefix exactly at a breakpoint: to read what the conversation's previous
    # request wrote at its "turn" marker, this request needs a marker on that same turn.
    previous = conversation.marker if conversation.marker is not None and conversation.marker < stable_end - 1 \
        else -1
    candidates = [("turn", stable_end - 1, conversation), ("previous", previous, conversation),
                  ("system", system_end - 1, template)]
    rec: dict[str, Any] = {"decision": "none", "markers": [], "skipped": []}
    out = body
    placed: set[int] = set()
    for name, i, stats in candidates:
        if i < 0 or i in placed:
            continue
        if slots <= 0:
            rec["skipped"].append({"at": name, "reason": "no slot left"})
            continue
        if ends[i] < MIN_TOKENS:
            rec["skipped"].append({"at": name, "reason": "under minimum", "tokens": ends[i]})
            continue
        observed = evidence.observed_reuses("short") if evidence is not None else None
        d = decide(prices.write, prices.read, prices.input, observed if observed is not None else
                   expected_reuses_keepalive(stats.count, stats.interval_s, BREAKPOINT_TTL_S, 1.0))
        if not d.cache:
            rec["skipped"].append({"at": name, "reason": "break-even", "breakeven": d.as_record()})
            continue
        marked = _mark(out, turns_key, i, allowed)
        if marked is None:
            rec["skipped"].append({"at": name, "reason": "no markable part"})
            continue
        out = marked
        placed.add(i)
        slots -= 1
        rec["markers"].append({"at": name, "turn": i, "tokens": ends[i], "breakeven": d.as_record()})
    rec["decision"] = "breakpoints" if rec["markers"] else "skip_breakpoints"
    return out, rec


def _mark(body: dict[str, Any], turns_key: str, i: int, allowed: frozenset[str]) -> dict[str, Any] | None:
    turns = list(body[turns_key])
    turn = turns[i]
    if not isinstance(turn, dict):
        return None
    content = turn.get("content")
    text_type = "text" if "text" in allowed else "input_text"
    if isinstance(content, str) and content:
        parts: list[Any] = [{"type": text_type, "text": content}]
    elif isinstance(content, list):
        parts = list(content)
    else:
        return None
    j = next((j for j in range(len(parts) - 1, -1, -1)
              if isinstance(parts[j], dict) and parts[j].get("type") in allowed), None)
    if j is None:
        return None
    if "prompt_cache_breakpoint" in parts[j]:
        return None
    parts[j] = {**parts[j], "prompt_cache_breakpoint": dict(_MARK)}
    turns[i] = {**turn, "content": parts}
    return {**body, turns_key: turns}
