"""Open the upstream request: send the body, wait for the status line and headers.

Nothing has reached the client at that point, so a connect error or a 5xx from a vLLM replica can
still be retried on another replica (the route stage picks it). A pooled stream is held one step
longer: until the replica's first body bytes, which a replica sends only once its prefill is done, so
a replica that dies while it queues or prefills (the longest part of most requests) is retried too, and
the router learns that the request's prefill work there is over. Timeouts and unreachable upstreams
become the gateway's own 504 and 502 in the caller's error shape.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

import aiohttp
import orjson

from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.metrics import UPSTREAM_ERRORS
from gateway.signing.base import OutgoingRequest
from gateway.upstream.client import UpstreamClients

log = logging.getLogger("gateway.upstream")

# Response headers never relayed: hop-by-hop, and those aiohttp has already acted on.
_DROP_RESPONSE = frozenset({
    "connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "date", "server",
    "proxy-authenticate", "trailer", "upgrade", "set-cookie", "alt-svc", "vary",
})


class Failover(Protocol):
    async def failover(self, ctx: RequestContext, status: int | None) -> bool:
        """Point `ctx` at another replica after a failure before any byte was relayed; False if none."""
        ...

    def prefilled(self, ctx: RequestContext) -> None:
        """The replica's first body bytes of `ctx`'s stream arrived: its prefill there is done."""
        ...


class ErrorHook(Protocol):
    async def on_upstream_error(self, ctx: RequestContext, status: int, body: bytes) -> bool:
        """An upstream error before any byte was relayed: True when the hook rewrote the request
        (`ctx.upstream_path`, `ctx.upstream_body`) so that sending it again can succeed — e.g. a
        Gemini CachedContent the gateway made expired upstream and was recreated."""
        ...


@dataclass(slots=True)
class Upstream:
    status: int
    headers: dict[str, str]
    response: aiohttp.ClientResponse
    first: bytes = b""  # body bytes already read (a pooled stream's first chunk), relayed before the rest

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, starting with the bytes already read."""
        if self.first:
            first, self.first = self.first, b""
            yield first
        async for chunk in self.response.content.iter_any():
            yield chunk

    @property
    def is_event_stream(self) -> bool:
        # SSE, or AWS event-stream frames (Bedrock ConverseStream)
        return self.headers.get("content-type", "").startswith(("text/event-stream",
                                                                "application/vnd.amazon.eventstream"))

    def release(self) -> None:
        self.response.release()

    def close(self) -> None:
        """Drop the connection: tells the upstream the caller went away."""
        self.response.close()


def relayable_headers(response: aiohttp.ClientResponse) -> dict[str, str]:
    return {k.lower(): v for k, v in response.headers.items() if k.lower() not in _DROP_RESPONSE}


async def open_upstream(ctx: RequestContext, clients: UpstreamClients, router: Failover | None,
                        method: str = "POST", error_hook: ErrorHook | None = None) -> Upstream:
    attempts = 0
    while True:
        attempts += 1
        payload = orjson.dumps(ctx.upstream_body) if method in ("POST", "PATCH") else None
        url = ctx.upstream_base_url + ctx.upstream_path
        session = clients.session(ctx.provider)
        retry_status: int | None = None
        headers = ctx.upstream_headers
        if ctx.signer is not None:  # the credential, added last: a signature covers the final bytes
            outgoing = OutgoingRequest(method, url, dict(headers), payload, ctx.upstream_key)
            await ctx.signer.sign(outgoing)
            headers = outgoing.headers
        try:
            response = await session.request(method, url, data=payload, headers=headers,
                                             proxy=clients.proxy_for(url))
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            UPSTREAM_ERRORS.labels(ctx.provider, "timeout").inc()
            raise GatewayError(504, f"The upstream ({ctx.provider}) did not answer in time.") from exc
        except aiohttp.ClientError as exc:
            UPSTREAM_ERRORS.labels(ctx.provider, "connect").inc()
            log.warning("upstream unreachable", extra={"request_id": ctx.request_id, "provider": ctx.provider,
                                                       "replica": ctx.replica, "error": type(exc).__name__})
            if router is not None and attempts < 8 and await router.failover(ctx, None):
                continue
            raise GatewayError(502, f"The upstream ({ctx.provider}) is unreachable.") from exc
        if response.status >= 400:
            UPSTREAM_ERRORS.labels(ctx.provider, str(response.status)).inc()
            if response.status >= 500 and router is not None and attempts < 8:
                retry_status = response.status
        if retry_status is not None and await router.failover(ctx, retry_status):  # type: ignore[union-attr]
            response.release()
            continue
        if response.status >= 400 and error_hook is not None:
            hook, error_hook = error_hook, None  # once per request
            if await hook.on_upstream_error(ctx, response.status, await response.read()):
                response.release()
                continue
        up = Upstream(response.status, relayable_headers(response), response)
        if router is not None and response.status == 200 and ctx.stream and up.is_event_stream:
            try:
                up.first = await response.content.readany()
            except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
                response.close()
                UPSTREAM_ERRORS.labels(ctx.provider, "timeout").inc()
                raise GatewayError(504, f"The upstream ({ctx.provider}) did not answer in time.") from exc
            except aiohttp.ClientError:
                up.first = b""
            if not up.first:  # the replica went away before its first byte: nothing reached the client yet
                response.close()
                UPSTREAM_ERRORS.labels(ctx.provider, "connect").inc()
                log.warning("upstream stream broke before its first byte", extra={
                    "request_id": ctx.request_id, "provider": ctx.provider, "replica": ctx.replica})
                if attempts < 8 and await router.failover(ctx, None):
                    continue
                raise GatewayError(502, f"The upstream ({ctx.provider}) broke off its answer.")
            router.prefilled(ctx)
        return up
