"""uvicorn's httptools protocol with a bounded TLS close at shutdown.

At shutdown uvicorn closes idle keep-alive connections and waits for them to be gone. Over TLS the close
sends close_notify and then waits for the peer's: a client idle in a connection pool (boto3, requests,
httpx) reads nothing, so the wait ran to the SSL shutdown timeout (30 s) — past `timeout_graceful_shutdown`,
so a SIGTERM took the full grace period and the lifespan shutdown (the usage flush) came after it. The
initiator of a close need not wait for the peer's close_notify (RFC 8446 §6.1): once ours has had a moment
to be written, the connection is dropped."""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# The import string uvicorn's `http` option takes (workers import it themselves).
HTTP = "gateway.tls_shutdown:TlsClosingHttpToolsProtocol"


class TlsClosingHttpToolsProtocol(HttpToolsProtocol):
    # Seconds left for the buffered bytes and our close_notify to leave before the connection is dropped.
    close_notify_grace = 1.0

    def shutdown(self) -> None:
        idle = self.cycle is None or self.cycle.response_complete
        tls = _is_tls(self.transport)
        super().shutdown()
        if idle and tls:
            self.loop.call_later(self.close_notify_grace, self._drop)

    def _drop(self) -> None:
        if self in self.connections:  # connection_lost has not run: the peer never answered
            self.transport.abort()


def _is_tls(transport: Any) -> bool:
    try:
        return transport.get_extra_info("sslcontext") is not None
    except AttributeError:
        # asyncio's SSL transport whose connection is already gone has no protocol left to ask (its
        # `_ssl_protocol` is None): there is nothing to drop
        return False
