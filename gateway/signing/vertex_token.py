"""OAuth access tokens for Vertex AI, minted from a service-account key file with google-auth.

The token is fetched once at start and then refreshed by a background task well before it expires, each refresh
running google-auth's blocking HTTP call in a worker thread. A request asks `await provider.token()`, which returns
the cached token at once; only when there is no usable token at all (the first call before `start()`, or every
refresh failed until expiry) does it wait, and then on the one refresh in flight, never on a blocking call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import google.auth.transport.requests
from google.auth.credentials import Credentials
from google.oauth2 import service_account

log = logging.getLogger(__name__)

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # google-auth keeps `expiry` as naive UTC


class VertexTokenProvider:
    """Access tokens for one set of credentials (normally a service account).

    `refresh_margin_s`: how long before expiry the background refresh runs (at most half the token's lifetime, so
    short-lived tokens are still used). `retry_s`: the first pause after a failed refresh, doubled up to
    `max_retry_s` while the current token lasts.
    """

    def __init__(self, credentials: Credentials, *, refresh_margin_s: float = 300.0, retry_s: float = 1.0,
                 max_retry_s: float = 30.0, request_factory: Callable[[], Any] | None = None) -> None:
        self.credentials = credentials
        self.refresh_margin_s = refresh_margin_s
        self.retry_s, self.max_retry_s = retry_s, max_retry_s
        self._request_factory = request_factory or google.auth.transport.requests.Request
        self._refreshing: asyncio.Task[None] | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._lifetime_s: float | None = None
        self.refreshes = 0

    @classmethod
    def from_service_account_file(cls, path: str, *, scopes: tuple[str, ...] = (CLOUD_PLATFORM_SCOPE,),
                                  **kwargs: Any) -> VertexTokenProvider:
        """From a key file (GOOGLE_APPLICATION_CREDENTIALS). Reads a local file: call it at startup."""
        return cls(service_account.Credentials.from_service_account_file(path, scopes=list(scopes)), **kwargs)

    @classmethod
    def from_service_account_info(cls, info: dict[str, Any], *, scopes: tuple[str, ...] = (CLOUD_PLATFORM_SCOPE,),
                                  **kwargs: Any) -> VertexTokenProvider:
        return cls(service_account.Credentials.from_service_account_info(info, scopes=list(scopes)), **kwargs)

    # -- state ----------------------------------------------------------------------------------------
    def seconds_left(self) -> float:
        """Seconds until the current token expires (0 without one; a token without expiry counts as long-lived)."""
        if not self.credentials.token:
            return 0.0
        expiry = self.credentials.expiry
        if expiry is None:
            return float("inf")
        return max(0.0, (expiry - _now()).total_seconds())

    def _margin(self) -> float:
        lifetime = self._lifetime_s or self.refresh_margin_s * 2
        return min(self.refresh_margin_s, lifetime / 2)

    def current(self) -> str | None:
        """The token if it is still valid, without waiting for anything."""
        return self.credentials.token if self.seconds_left() > 0 else None

    # -- refresh --------------------------------------------------------------------------------------
    def _refresh_blocking(self) -> None:
        self.credentials.refresh(self._request_factory())

    async def _refresh_once(self) -> None:
        await asyncio.to_thread(self._refresh_blocking)
        self.refreshes += 1
        left = self.seconds_left()
        self._lifetime_s = left if left != float("inf") else None

    async def refresh(self) -> None:
        """Refresh now, joining a refresh already in flight (one token request at a time)."""
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._refresh_once())
        await asyncio.shield(self._refreshing)

    async def token(self) -> str:
        """A valid access token. Waits only when none is usable (then on the shared refresh)."""
        token = self.current()
        if token is not None:
            idle = self._refreshing is None or self._refreshing.done()
            if self._loop_task is None and idle and self.seconds_left() <= self._margin():
                # No background loop (not started): refresh ahead without holding this request up.
                self._refreshing = asyncio.ensure_future(self._refresh_once())
            return token
        await self.refresh()
        token = self.current()
        if token is None:
            raise RuntimeError("the token endpoint answered without a usable access token")
        return token

    async def _run(self) -> None:
        delay = self.retry_s
        while True:
            wait = self.seconds_left() - self._margin()
            if wait > 0:
                await asyncio.sleep(min(wait, 3600.0))
                continue
            try:
                await self.refresh()
                delay = self.retry_s
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the old token may still be valid: keep serving it, retry with backoff
                log.warning("Vertex AI token refresh failed (%s); retrying in %.0fs", e, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_retry_s)

    async def start(self) -> None:
        """Fetch the first token and keep it fresh in the background until `close()`."""
        if self.current() is None:
            await self.refresh()
        if self._loop_task is None:
            self._loop_task = asyncio.ensure_future(self._run())

    async def close(self) -> None:
        for task in (self._loop_task, self._refreshing):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._loop_task = self._refreshing = None
