"""The bounded TLS close at shutdown asks each connection whether it is TLS. asyncio's SSL transport closed
a second time (uvicorn's shutdown closing a connection that had already been closed) has no protocol left
to ask and raised AttributeError in the server thread: it must read as "nothing to drop"."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

from gateway.tls_shutdown import _is_tls
from gateway_dev.tls import self_signed


def test_a_tls_connection_closed_twice_is_nothing_to_drop(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context()
    client_ctx.check_hostname = False
    client_ctx.verify_mode = ssl.CERT_NONE

    async def scenario() -> tuple[bool, bool, bool]:
        loop = asyncio.get_running_loop()
        made: asyncio.Queue[Any] = asyncio.Queue()

        class Server(asyncio.Protocol):
            def connection_made(self, transport: Any) -> None:
                made.put_nowait(transport)

        tls_server = await loop.create_server(Server, "127.0.0.1", 0, ssl=server_ctx)
        plain_server = await loop.create_server(Server, "127.0.0.1", 0)
        _, tls_writer = await asyncio.open_connection(
            "127.0.0.1", tls_server.sockets[0].getsockname()[1], ssl=client_ctx)
        tls = await asyncio.wait_for(made.get(), 5)
        live = _is_tls(tls)
        tls.close()
        tls.close()  # the second close drops the transport's SSL protocol
        gone = _is_tls(tls)
        _, plain_writer = await asyncio.open_connection("127.0.0.1", plain_server.sockets[0].getsockname()[1])
        cleartext = _is_tls(await asyncio.wait_for(made.get(), 5))
        for w in (tls_writer, plain_writer):
            w.close()
        tls_server.close()
        plain_server.close()
        return live, gone, cleartext

    live, gone, cleartext = asyncio.run(scenario())
    assert live and not gone and not cleartext
