"""The embeddings cache: one entry per input string of a batch.

A RAG pipeline embeds the same chunks again and again (re-indexing, overlapping batches, the same
query). `POST /v1/embeddings` is cached per input: a batch whose every input is stored is answered
without an upstream call (`x-gateway-cache: response-hit`); a partly stored batch sends only the
missing inputs upstream and answers the whole batch in order (`miss`, with
`x-gateway-embeddings-cached: K/N`). The tenant's `response_cache` policy governs it (`enabled`,
`ttl`, `scope`, `models`, `exclude_models`, `routes`: `embeddings`), as do `Cache-Control: no-cache`
and `no-store`.

Key per input: the tenant (and the user under `scope: user`), provider, model, the input string and
every other body field except `user` (an end-user id that does not change a vector) — `dimensions`
and `encoding_format` included, so a base64 vector is never served for a float request. Inputs given
as token arrays are not cached (the batch is forwarded as it is). Entries live under the response
cache's tenant prefix, so `POST /admin/cache/purge` with layer `response` removes them too.

Each entry keeps the vector and that input's share of the upstream batch's prompt tokens (split by
length): a hit's usage record then carries the tokens, and the cost, it saved.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.cache.key import canonical_bytes, tenant_prefix
from gateway.context import RequestContext
from gateway.metrics import CACHE_LOOKUPS
from gateway.stores.base import KVStore, StoreUnavailable

log = logging.getLogger("gateway.cache")

LAYER = "embeddings"
HEADER = "x-gateway-embeddings-cached"
_MAX_INPUTS = 2048  # OpenAI's own batch limit; a larger batch is forwarded uncached
_NOT_IN_KEY = frozenset({"input", "user"})


@dataclass(eq=False)
class EmbeddingsPlan:
    """One request's inputs: which are stored, which go upstream."""

    ctx: RequestContext
    inputs: list[str]
    keys: list[str]
    ttl: float
    found: dict[int, dict[str, Any]] = field(default_factory=dict)  # input index → stored entry

    @property
    def missing(self) -> list[int]:
        return [i for i in range(len(self.inputs)) if i not in self.found]

    @property
    def complete(self) -> bool:
        return len(self.found) == len(self.inputs)

    def upstream_body(self) -> dict[str, Any]:
        """The body with only the inputs nobody stored (a single string stays a string)."""
        missing = [self.inputs[i] for i in self.missing]
        single = isinstance(self.ctx.body.get("input"), str)
        return {**self.ctx.upstream_body, "input": missing[0] if single else missing}

    def cached_body(self) -> dict[str, Any]:
        """The whole answer from stored entries (nothing was billed: usage 0)."""
        data = [{"object": "embedding", "index": i, "embedding": self.found[i]["e"]} for i in range(len(self.inputs))]
        model = next((e.get("m") for e in self.found.values() if e.get("m")), self.ctx.model)
        return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    def saved_tokens(self) -> int:
        return sum(int(e.get("n") or 0) for e in self.found.values())

    def merge(self, upstream: dict[str, Any]) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
        """The upstream answer for the missing inputs merged with the stored ones, in the caller's
        order; and the new entries to store (index → entry)."""
        items = upstream.get("data")
        missing = self.missing
        if not isinstance(items, list) or len(items) != len(missing):
            raise ValueError("the upstream answered another number of embeddings than it was sent")
        usage = upstream.get("usage")
        tokens = int(usage.get("prompt_tokens") or 0) if isinstance(usage, dict) else 0
        lengths = [max(1, len(self.inputs[i])) for i in missing]
        total = sum(lengths)
        model = upstream.get("model") or self.ctx.model
        fresh: dict[int, dict[str, Any]] = {}
        for item in sorted(items, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0):
            pos = item.get("index", 0) if isinstance(item, dict) else -1
            if not isinstance(pos, int) or not 0 <= pos < len(missing) or "embedding" not in item:
                raise ValueError("unreadable upstream embedding")
            i = missing[pos]
            fresh[i] = {"e": item["embedding"], "m": model, "n": round(tokens * lengths[pos] / total)}
        entries = {**self.found, **fresh}
        data = [{"object": "embedding", "index": i, "embedding": entries[i]["e"]} for i in range(len(self.inputs))]
        return {**upstream, "data": data}, fresh


class EmbeddingsCache:
    def __init__(self, store: KVStore) -> None:
        self.store = store

    def plan(self, ctx: RequestContext) -> EmbeddingsPlan | None:
        """None when the cache does not apply to this request (it is then forwarded as it is)."""
        policy = ctx.policy.response_cache if ctx.policy is not None else None
        if policy is None or not policy.enabled or ctx.no_store:
            return None
        if policy.routes and "embeddings" not in policy.routes:
            return None
        if policy.models and not any(fnmatch.fnmatchcase(ctx.model, p) for p in policy.models):
            return None
        if any(fnmatch.fnmatchcase(ctx.model, p) for p in policy.exclude_models):
            return None
        if policy.scope == "user" and not ctx.user:
            return None
        raw = ctx.body.get("input")
        inputs = [raw] if isinstance(raw, str) else raw
        if not isinstance(inputs, list) or not inputs or len(inputs) > _MAX_INPUTS \
                or not all(isinstance(t, str) for t in inputs):
            return None
        rest = {k: v for k, v in ctx.body.items() if k not in _NOT_IN_KEY}
        base = {"v": 1, "tenant": ctx.tenant, "user": ctx.user if policy.scope == "user" else None,
                "provider": ctx.provider, "model": ctx.model, "body": rest}
        prefix = tenant_prefix(ctx.tenant) + "e:"
        keys = [prefix + hashlib.sha256(canonical_bytes({**base, "input": text})).hexdigest() for text in inputs]
        return EmbeddingsPlan(ctx, list(inputs), keys, policy.ttl)

    async def lookup(self, plan: EmbeddingsPlan) -> None:
        if plan.ctx.no_cache:
            return
        try:
            blobs = await asyncio.gather(*(self.store.get(k) for k in plan.keys))
        except StoreUnavailable as exc:
            CACHE_LOOKUPS.labels(layer=LAYER, result="error").inc()
            log.warning("embeddings cache lookup failed; treated as a miss", extra={"error": str(exc)})
            return
        for i, blob in enumerate(blobs):
            entry = _decode(blob, plan.ctx.tenant)
            if entry is not None:
                plan.found[i] = entry
        CACHE_LOOKUPS.labels(layer=LAYER, result="hit" if plan.complete else "miss").inc()

    async def store_new(self, plan: EmbeddingsPlan, fresh: dict[int, dict[str, Any]]) -> None:
        try:
            await asyncio.gather(*(self.store.set(plan.keys[i], orjson.dumps({**e, "t": plan.ctx.tenant}),
                                                  ttl=plan.ttl) for i, e in fresh.items()))
        except StoreUnavailable as exc:
            log.warning("embeddings cache write failed", extra={"error": str(exc)})

    def mark(self, plan: EmbeddingsPlan, headers: dict[str, str]) -> None:
        """What the request and its usage record say about the batch."""
        ctx = plan.ctx
        ctx.cache_status = "response-hit" if plan.complete else "miss"
        headers[HEADER] = f"{len(plan.found)}/{len(plan.inputs)}"
        ctx.record["embeddings_cache"] = {"inputs": len(plan.inputs), "cached": len(plan.found)}
        if plan.complete:
            ctx.answered_by = "response-cache"
            tokens = plan.saved_tokens()
            ctx.record["saved_from"] = {"layer": "response", "provider": ctx.provider, "model": ctx.model,
                                        "usage_raw": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _decode(blob: bytes | None, tenant: str) -> dict[str, Any] | None:
    if blob is None:
        return None
    try:
        entry = orjson.loads(blob)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(entry, dict) or entry.get("t") != tenant or "e" not in entry:
        return None
    return entry


async def merge_embeddings(cache: EmbeddingsCache, plan: EmbeddingsPlan, data: dict[str, Any],
                           raw: bytes) -> tuple[Any, bytes]:
    """The upstream's vectors for the missing inputs with the stored ones; the new ones stored."""
    try:
        merged, fresh = plan.merge(data)
    except ValueError as exc:  # relayed as the upstream sent it, nothing stored
        plan.ctx.record["embeddings_cache"]["error"] = str(exc)
        return data, raw
    await cache.store_new(plan, fresh)
    return merged, orjson.dumps(merged) if plan.found else raw
