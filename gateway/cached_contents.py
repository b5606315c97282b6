"""Tenant ownership of Gemini cachedContents created through the gateway.

Every tenant's requests reach Gemini with the gateway's one key, so Gemini itself would let tenant
B read, extend or delete tenant A's caches. The gateway records which tenant created each cache and
answers 404 for anyone else's, filters lists, and refuses a generateContent that names another
tenant's cache. When the store cannot answer, the check fails closed (503): a leak across tenants
is worse than a refused request.
"""

from __future__ import annotations

from typing import Any

from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.stores.base import KVStore, StoreUnavailable

_TTL = 8 * 24 * 3600.0  # longer than any cache's TTL; PATCH may extend a cache, the record outlives it


def _key(tenant: str, name: str) -> str:
    return f"gw:ccown:{{{tenant}}}:{name}"


def _name(path: str) -> str | None:
    """`/v1beta/cachedContents/abc` → `cachedContents/abc`."""
    _, sep, rest = path.partition("/cachedContents/")
    return f"cachedContents/{rest.split('?')[0]}" if sep and rest else None


class CachedContentOwnership:
    def __init__(self, store: KVStore) -> None:
        self.store = store

    async def owns(self, tenant: str, name: str) -> bool:
        try:
            return await self.store.get(_key(tenant, name)) is not None
        except StoreUnavailable as exc:
            raise GatewayError(503, "Cache ownership cannot be checked right now; try again.") from exc

    async def check_reference(self, ctx: RequestContext) -> None:
        """A generateContent body naming `cachedContent` must name one of the tenant's caches (for a
        vendor that keeps such cache objects, asked in its own protocol)."""
        if ctx.vendor is None or not ctx.vendor.cache_objects or ctx.translated:
            return
        name = ctx.body.get("cachedContent")
        if name is None:
            return
        if not isinstance(name, str) or not await self.owns(ctx.tenant, name):
            raise GatewayError(403, f"CachedContent not found (or permission denied): {name}", "PERMISSION_DENIED")

    async def before(self, ctx: RequestContext) -> None:
        name = _name(ctx.native_path)
        if name is not None and not await self.owns(ctx.tenant, name):
            raise GatewayError(403, f"CachedContent not found (or permission denied): {name}", "PERMISSION_DENIED")

    async def after(self, ctx: RequestContext, data: dict[str, Any]) -> dict[str, Any]:
        method = ctx.method
        path_name = _name(ctx.native_path)
        try:
            if method == "POST" and path_name is None and isinstance(data.get("name"), str):
                await self.store.set(_key(ctx.tenant, data["name"]), b"1", ttl=_TTL)
            elif method == "DELETE" and path_name is not None:
                await self.store.delete(_key(ctx.tenant, path_name))
            elif method == "GET" and path_name is None and isinstance(data.get("cachedContents"), list):
                owned = [c for c in data["cachedContents"]
                         if isinstance(c, dict) and await self.owns(ctx.tenant, str(c.get("name")))]
                data = {**data, "cachedContents": owned}
        except StoreUnavailable as exc:
            raise GatewayError(503, "Cache ownership cannot be recorded right now; try again.") from exc
        return data
