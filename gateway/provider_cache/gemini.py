"""Gemini explicit caches (CachedContent), created and shared by every gateway replica.

What goes in a cache is what the API requires to move there — `systemInstruction`, `tools`,
`toolConfig` (a request naming a cache may not carry them) — plus, only when those alone are under
the model's minimum, the first user turn's contents (a long document the conversation is about).
The conversation itself is left to Gemini's implicit cache: a CachedContent is immutable, and one
per turn would pay creation and storage again and again.

Lifecycle:
- identity: a hash of (model, upstream key fingerprint, cached parts) — the same in every replica;
  the cache's `displayName` is `gw-<hash>`; the handle {name, expireTime, tokens} lives in the
  shared store until expireTime, so no replica ever LISTs caches (a LIST costs a peer ~1.5 s);
- create: when the prefix clears the minimum with a margin and the break-even (write at the input
  price, reads, and storage for the TTL) says so; a `set nx` lock with an owner token makes one
  replica create it while the others send the request plain; a refused creation is remembered
  for ten minutes;
- use: the request drops the moved parts and names the cache (and goes to `v1beta`, where the
  explicit-caching API is documented);
- extend: a cache used in the second half of its life gets its TTL renewed (PATCH), once per
  period across replicas;
- recover: an upstream 403/404, or a 400 about the cached content, for a request that named one of
  ours drops the handle, recreates the cache once and retries (plain, if that fails too);
- purge: deletes the tenant's caches upstream (with the gateway's own key; under BYOK the caller's
  key is never stored, so those are forgotten and left to expire) and their handles.

The same lifecycle serves Vertex AI's regional caches: `cache_api.py` says where a cache lives (the Gemini
API or one Vertex location) and how to authenticate; a Vertex cache's identity includes its project and
location, so a request in another location never finds it, and the purge deletes each cache in its own
location.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp
import orjson

from gateway.accounting.breakeven import Decision, decide, expected_reuses_window
from gateway.provider_cache.cache_api import CacheApi, GeminiApi, api_of_record, key_fingerprint  # noqa: F401
from gateway.provider_cache.stats import PrefixStats
from gateway.provider_cache.tables import GEMINI_MARGIN, CachePrices
from gateway.provider_cache.tokens import TokenCounter
from gateway.stores.base import KVStore, StoreUnavailable

log = logging.getLogger("gateway.provider_cache")

API_VERSION = "v1beta"
LOCK_TTL_S = 30.0
FAILED_TTL_S = 600.0
SAFETY_S = 30.0  # a handle this close to its expiry is treated as gone


def _canon(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()


def parse_time(value: str) -> float:
    """RFC 3339 (up to 9 fractional digits, `Z`) → epoch seconds."""
    s = value.strip().replace("Z", "+00:00")
    if "." in s:
        head, _, rest = s.partition(".")
        digits = "".join(c for c in rest[:12] if c.isdigit())
        s = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits):]}"
    return datetime.fromisoformat(s).timestamp()


def handle_key(tenant: str, cache_id: str) -> str:
    return f"gw:pc:gem:{{{tenant}}}:{cache_id}"


def index_key(tenant: str) -> str:
    return f"gw:pc:gemidx:{{{tenant}}}"


@dataclass(frozen=True, slots=True)
class Prefix:
    """The parts of one request a cache would hold."""

    cache_id: str
    parts: dict[str, Any]  # systemInstruction / tools / toolConfig / contents, as sent upstream
    leading: int  # how many leading contents move into the cache
    tokens: int


def choose_prefix(body: dict[str, Any], model: str, key_fp: str, stable_end: int, minimum: int,
                  counter: TokenCounter) -> tuple[Prefix | None, int]:
    """The prefix to cache (None when even the widest allowed one is under the minimum with the
    margin), and its token count."""
    parts = {k: body[k] for k in ("systemInstruction", "tools", "toolConfig") if body.get(k)}
    tokens = sum(counter.count(_canon(v)) for v in parts.values())
    leading = 0
    need = int(minimum * GEMINI_MARGIN)
    contents = found if isinstance(found := body.get("contents"), list) else []
    if tokens < need:
        while leading < min(stable_end, len(contents)) and isinstance(contents[leading], dict) \
                and (contents[leading].get("role") or "user") == "user":
            tokens += counter.count(_canon(contents[leading].get("parts") or []))
            leading += 1
        if leading:
            parts["contents"] = contents[:leading]
    if not parts or tokens < need:
        return None, tokens
    cache_id = hashlib.sha256(_canon(["gemini", model, key_fp, parts]).encode()).hexdigest()[:32]
    return Prefix(cache_id, parts, leading, tokens), tokens


def reference(body: dict[str, Any], prefix: Prefix, name: str) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k not in ("systemInstruction", "tools", "toolConfig")}
    if prefix.leading:
        out["contents"] = list(body["contents"])[prefix.leading:]
    out["cachedContent"] = name
    return out


def v1beta_path(path: str) -> str:
    return "/" + API_VERSION + path[3:] if path.startswith("/v1/") else path


class GeminiCaches:
    """The CachedContent lifecycle for one gateway process; shared state lives in `store`."""

    def __init__(self, store: KVStore, session: Callable[[], aiohttp.ClientSession], *,
                 timeout_s: float = 10.0, store_timeout_s: float = 0.1,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self._session = session
        self.timeout_s = timeout_s
        self.store_timeout_s = store_timeout_s
        self._now = clock

    # ---- the request path ----------------------------------------------------------------------
    async def handle(self, tenant: str, prefix: Prefix) -> dict[str, Any] | None:
        """The live handle of `prefix`, or None (absent, expired, or the store failed)."""
        try:
            async with asyncio.timeout(self.store_timeout_s):
                raw = await self.store.get(handle_key(tenant, prefix.cache_id))
        except (StoreUnavailable, TimeoutError):
            return None
        if raw is None:
            return None
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        return rec if rec.get("expire", 0) - self._now() > SAFETY_S else None

    def break_even(self, prefix: Prefix, prices: CachePrices, stats: PrefixStats, ttl_s: float,
                   prior: float, observed: float | None = None) -> Decision:
        """`observed`: the family's reads per created cache so far (outcomes.py), which replaces the
        prior and the interval estimate once there is evidence."""
        reuses = observed if observed is not None else expected_reuses_window(
            stats.count, stats.interval_s, ttl_s, max(prior, 0.0))
        # The creating request pays the creation at the input price and then reads the cache too.
        return decide(prices.input + prices.read, prices.read, prices.input, reuses,
                      storage_cost=prices.storage_hour * ttl_s / 3600.0)

    async def create(self, tenant: str, prefix: Prefix, model: str, base_url: str, api_key: str,
                     ttl_s: float, api: CacheApi | None = None) -> tuple[dict[str, Any] | None, str]:
        """Create the cache under the shared lock (through `api`, default the Gemini API at `base_url` with
        `api_key`). Returns (handle, outcome); outcome is one of "created", "locked" (another replica is
        creating it), "failed"."""
        use: CacheApi = api if api is not None else GeminiApi(base_url, api_key)
        try:
            if await self.store.get(f"gw:pc:gemfail:{{{tenant}}}:{prefix.cache_id}") is not None:
                return None, "failed"
            lock = f"gw:pc:gemlock:{{{tenant}}}:{prefix.cache_id}"
            owner = uuid.uuid4().hex.encode()
            if not await self.store.set(lock, owner, ttl=LOCK_TTL_S, nx=True):
                return None, "locked"
        except StoreUnavailable:
            # Without the shared lock every replica might create its own copy: better none.
            return None, "failed"
        try:
            # Another replica may have finished between our read and our lock.
            existing = await self.handle(tenant, prefix)
            if existing is not None:
                return existing, "reused"
            body = {"model": use.model_name(model), "ttl": f"{int(ttl_s)}s",
                    "displayName": f"gw-{prefix.cache_id[:24]}", **prefix.parts}
            status, data = await self._call("POST", use, use.collection_path(), body)
            if status != 200 or not isinstance(data, dict) or not data.get("name"):
                log.warning("gemini cache creation refused", extra={"tenant": tenant, "status": status,
                                                                    "error": str(data)[:300]})
                if status is not None and 400 <= status < 500:
                    await self.store.set(f"gw:pc:gemfail:{{{tenant}}}:{prefix.cache_id}", str(status).encode(),
                                         ttl=FAILED_TTL_S)
                return None, "failed"
            rec = self._record(data, prefix, model, use, ttl_s)
            await self._save(tenant, prefix.cache_id, rec)
            return rec, "created"
        except StoreUnavailable:
            return None, "failed"
        finally:
            try:
                await self.store.delete_if_equals(lock, owner)
            except StoreUnavailable:
                pass

    async def extend(self, tenant: str, prefix: Prefix, rec: dict[str, Any], api_key: str,
                     ttl_s: float, api: CacheApi | None = None) -> tuple[dict[str, Any] | None, float]:
        """Renew the TTL when the cache is in the second half of its life (one replica per period).
        Returns the (possibly updated) handle — None when the cache turned out to be gone — and the
        hours of storage added."""
        if rec["expire"] - self._now() > ttl_s / 2:
            return rec, 0.0
        try:
            if not await self.store.set(f"gw:pc:gemext:{{{tenant}}}:{prefix.cache_id}", b"1",
                                        ttl=max(LOCK_TTL_S, ttl_s / 4), nx=True):
                return rec, 0.0
        except StoreUnavailable:
            return rec, 0.0
        use: CacheApi = api if api is not None else GeminiApi(rec["base"], api_key)
        status, data = await self._call("PATCH", use, use.resource_path(rec["name"]), {"ttl": f"{int(ttl_s)}s"})
        if status in (403, 404):
            await self.forget(tenant, prefix.cache_id)
            return None, 0.0
        if status != 200 or not isinstance(data, dict) or not data.get("expireTime"):
            return rec, 0.0
        new_expire = parse_time(data["expireTime"])
        added = max(0.0, new_expire - rec["expire"]) / 3600.0
        rec = {**rec, "expire": new_expire}
        try:
            await self._save(tenant, prefix.cache_id, rec)
        except StoreUnavailable:
            pass
        return rec, added

    async def forget(self, tenant: str, cache_id: str) -> None:
        try:
            await self.store.delete(handle_key(tenant, cache_id))
            await self.store.srem(index_key(tenant), cache_id)
        except StoreUnavailable:
            pass

    # ---- purge -------------------------------------------------------------------------------------
    async def purge(self, tenant: str, gateway_key: str | None,
                    vertex_token: Callable[[], Awaitable[str]] | None = None) -> int:
        """Delete the tenant's caches upstream (those made with the gateway's credentials: its Gemini key,
        its Vertex service account, each Vertex cache in its own location) and every handle."""
        ids = await self.store.smembers(index_key(tenant))
        removed = 0
        for cache_id in ids:
            raw = await self.store.get(handle_key(tenant, cache_id))
            try:
                rec = orjson.loads(raw) if raw is not None else None
            except orjson.JSONDecodeError:
                rec = None
            if rec is not None:
                api = api_of_record(rec, gateway_key, vertex_token)
                if api is not None:
                    try:
                        status, _ = await self._call("DELETE", api, api.resource_path(rec["name"]), None)
                    except Exception as exc:  # a token that cannot be minted: the handle still goes
                        log.warning("cache delete skipped", extra={"tenant": tenant, "error": repr(exc)})
                        status = None
                    if status not in (200, 403, 404):
                        log.warning("gemini cache not deleted upstream", extra={"tenant": tenant, "status": status})
                removed += 1
            await self.store.delete(handle_key(tenant, cache_id))
        await self.store.delete(index_key(tenant))
        return removed

    # ---- internals ---------------------------------------------------------------------------------
    def _record(self, data: dict[str, Any], prefix: Prefix, model: str, api: CacheApi,
                ttl_s: float) -> dict[str, Any]:
        now = self._now()
        try:
            expire = parse_time(data["expireTime"]) if data.get("expireTime") else now + ttl_s
        except ValueError:
            expire = now + ttl_s
        usage = found if isinstance(found := data.get("usageMetadata"), dict) else {}
        tokens = int(usage.get("totalTokenCount") or prefix.tokens)
        return {"name": data["name"], "expire": expire, "tokens": tokens, "model": model, **api.describe(),
                "leading": prefix.leading, "created": now}

    async def _save(self, tenant: str, cache_id: str, rec: dict[str, Any]) -> None:
        ttl = max(1.0, rec["expire"] - self._now())
        await self.store.set(handle_key(tenant, cache_id), orjson.dumps(rec), ttl=ttl)
        await self.store.sadd(index_key(tenant), cache_id)

    async def _call(self, method: str, api: CacheApi, path: str,
                    body: dict[str, Any] | None) -> tuple[int | None, Any]:
        headers = {**await api.headers(), "content-type": "application/json"}
        try:
            async with asyncio.timeout(self.timeout_s):
                async with self._session().request(method, api.base_url.rstrip("/") + path, headers=headers,
                                                   data=orjson.dumps(body) if body is not None else None) as r:
                    raw = await r.read()
                    try:
                        return r.status, orjson.loads(raw) if raw else {}
                    except orjson.JSONDecodeError:
                        return r.status, raw[:300].decode("utf-8", "replace")
        except (TimeoutError, aiohttp.ClientError) as exc:
            log.warning("gemini cache call failed", extra={"method": method, "error": repr(exc)})
            return None, None
