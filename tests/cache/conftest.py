"""Fixtures of the response-cache tests: a tenant per test, and `kv`, which runs a test against the
embedded store and against a real redis-server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from gateway.config import Settings
from gateway.stores import KVStore, open_store


@pytest.fixture
def tenant() -> str:
    """A tenant name of its own per test: the session's redis-server is shared."""
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture(params=["memory", "redis"])
async def kv(request: pytest.FixtureRequest) -> AsyncIterator[KVStore]:
    if request.param == "memory":
        store = open_store(Settings())
    else:
        store = open_store(Settings(redis_url=request.getfixturevalue("redis_server").url))
    try:
        yield store
    finally:
        await store.close()

