"""One pooled HTTP client per upstream.

aiohttp rather than httpx/httpx2: on this 2-core machine it is the lightest asyncio client per
request (C-accelerated HTTP parser, no per-request transport layers), it streams a response body
as it arrives (`content.iter_any()`), and it is already installed with litellm. The vendor SDKs'
httpx2 only matters on the client side of the gateway, which speaks plain HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

# proxy_bypass_environment is in the standard library but not in its type stubs
from urllib.request import getproxies_environment, proxy_bypass_environment  # type: ignore[attr-defined]

import aiohttp

if TYPE_CHECKING:
    from gateway.config import Settings


class UpstreamClients:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._sessions: dict[str, aiohttp.ClientSession] = {}
        self._proxies: dict[str, str | None] = {}

    def timeout(self) -> aiohttp.ClientTimeout:
        # No total limit: a long generation streams for minutes. sock_read bounds the gap between bytes.
        return aiohttp.ClientTimeout(total=None, connect=self.settings.connect_timeout,
                                     sock_read=self.settings.read_timeout)

    def session(self, upstream: str) -> aiohttp.ClientSession:
        """The pooled session of `upstream` (a provider name; each vLLM replica shares the pool's)."""
        session = self._sessions.get(upstream)
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(limit=0, limit_per_host=1024, ttl_dns_cache=60,
                                             keepalive_timeout=60, enable_cleanup_closed=True)
            # No cookie jar: the session is shared by every tenant, so a vendor's Set-Cookie on one
            # tenant's request would otherwise be sent with the next tenant's.
            session = aiohttp.ClientSession(connector=connector, timeout=self.timeout(), auto_decompress=True,
                                            skip_auto_headers=("User-Agent",), cookie_jar=aiohttp.DummyCookieJar())
            self._sessions[upstream] = session
        return session

    def proxy_for(self, url: str) -> str | None:
        """The forward egress proxy for `url` (HTTPS_PROXY/HTTP_PROXY minus NO_PROXY; the Helm chart's
        proxy mode), decided once per host. Not `trust_env=True`: aiohttp would then re-read the
        environment and ~/.netrc in a thread on every request, a third of the proxy's CPU time."""
        parsed = urlsplit(url)
        host = parsed.netloc
        if host not in self._proxies:
            proxies = getproxies_environment()
            proxy = proxies.get(parsed.scheme)
            if proxy and proxy_bypass_environment(parsed.hostname or "", proxies):
                proxy = None
            self._proxies[host] = proxy
        return self._proxies[host]

    async def close(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()
