"""Fixtures of the provider-cache tests: the vendor emulators (one set per module, caches reset per
test), a fresh tenant per test, and `kv`, which runs a test against the embedded store and a real
redis-server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from gateway.config import Settings
from gateway.stores import KVStore, open_store
from gateway_dev.emulators import EmulatorSet
from gateway_dev.localrun import free_port


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        yield e


@pytest.fixture(autouse=True)
def _fresh(request: pytest.FixtureRequest) -> Iterator[None]:
    if "emu" in request.fixturenames:
        request.getfixturevalue("emu").reset(caches=True)
    yield


@pytest.fixture
def tenant() -> str:
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


def free_port_url() -> str:
    """A Redis URL on which nothing listens (a store that fails at once)."""
    return f"redis://127.0.0.1:{free_port()}/0"
