"""The `store` fixture: every KVStore contract test runs against the embedded store and a real Redis
(single, a 3-primary Cluster, and Sentinel-managed)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from gateway.config import Settings
from gateway.stores import KVStore, open_store


@pytest.fixture(params=["memory", "redis", "cluster", "sentinel"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[KVStore]:
    if request.param == "memory":
        kv = open_store(Settings())
    else:
        fixture = {"redis": "redis_server", "cluster": "redis_cluster", "sentinel": "redis_sentinel"}[request.param]
        # The contract is about answers, not deadlines (the deadline has its own tests against a
        # silent Redis): a generous per-call deadline keeps a loaded machine from failing a call.
        kv = open_store(Settings(redis_url=request.getfixturevalue(fixture).url, store_timeout=5.0))
    try:
        yield kv
    finally:
        await kv.close()


@pytest.fixture
def k() -> object:
    """Unique key names per test: the session's redis-server is shared."""
    prefix = f"t:{uuid.uuid4().hex[:12]}:"

    def make(name: str = "") -> str:
        return prefix + name

    return make


@pytest.fixture
def silent_redis_url() -> Iterator[str]:
    """A port that completes the TCP handshake and never answers (a hung Redis)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(128)
        yield f"redis://127.0.0.1:{s.getsockname()[1]}/0"
