"""Vertex AI context caches: the Gemini CachedContent plug-in with the cache in the request's own location.

A cache is created in, and used from, one location (`projects/{p}/locations/{l}/cachedContents`), with the
gateway's access token; its identity includes project and location, so a request in another location never
names it. The policy's `provider_cache.gemini` decides, as for the Gemini API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.provider_cache.cache_api import CacheApi, VertexApi
from gateway.provider_cache.plugins import GeminiCache

if TYPE_CHECKING:
    from gateway.context import RequestContext

SCRATCH = "vertex"  # {"project", "location"}: set by the Vertex spec's `prepare`


class VertexCache(GeminiCache):
    provider = "vertex_ai"

    def api(self, ctx: RequestContext) -> CacheApi | None:
        where = ctx.scratch.get(SCRATCH)
        token = getattr(ctx.signer, "token", None)
        if not where or token is None:
            return None
        return VertexApi(ctx.upstream_base_url, where["project"], where["location"], token)


VERTEX_CACHE = VertexCache()
