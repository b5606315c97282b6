"""The `store` fixture: every KVStore contract test runs against the embedded store and a real Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from gateway.config import Settings
from gateway.stores import KVStore, open_store


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[KVStore]:
    if request.param == "memory":
        kv = open_store(Settings())
    else:
        server = request.getfixturevalue("redis_server")
        kv = open_store(Settings(redis_url=server.url))
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
