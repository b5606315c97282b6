"""Shared fixtures: offline environment, a real redis-server on a free port, free ports."""

from __future__ import annotations

import os

# The gateway must run with no egress: set before anything imports litellm or huggingface.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway_dev.localrun import free_port
from gateway_dev.redis_servers import RedisNode

__all__ = ["RedisServer", "free_port"]


# A real redis-server on a free port (killed by pid, like a crash, in the fail-open tests).
RedisServer = RedisNode


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One real redis-server for the session; tests flush what they use or pick unique keys."""
    with tempfile.TemporaryDirectory(prefix="gw-redis-") as d:
        server = RedisNode(Path(d), []).start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A private redis-server a test may kill and restart."""
    with tempfile.TemporaryDirectory(prefix="gw-redis-") as d:
        server = RedisNode(Path(d), []).start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def redis_cluster():  # type: ignore[no-untyped-def]
    """A real 3-primary Redis Cluster on loopback for the session (`.url` is `redis+cluster://...`)."""
    from gateway_dev.redis_servers import RedisClusterProcs

    with RedisClusterProcs(masters=3) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def redis_sentinel():  # type: ignore[no-untyped-def]
    """A real Sentinel setup (primary, replica, 3 Sentinels; password) for the session."""
    from gateway_dev.redis_servers import RedisSentinelProcs

    with RedisSentinelProcs(password="sentinel-test-pw") as sentinel:
        yield sentinel


@pytest.fixture
def emulators():  # type: ignore[no-untyped-def]
    """The vendor emulators (OpenAI, Anthropic, Gemini, DeepSeek) on a loopback port, frozen clock."""
    from gateway_dev.emulators.harness import EmulatorSet

    with EmulatorSet() as emu:
        yield emu


@pytest.fixture
def gateway_factory(emulators, tmp_path):  # type: ignore[no-untyped-def]
    """`make(tenants, **settings)` → a started `LocalGateway` on the `emulators`; stopped after the test."""
    from gateway_dev.localrun import LocalGateway

    started: list[LocalGateway] = []

    def make(tenants=None, emulators_=None, **kw):  # type: ignore[no-untyped-def]
        folder = tmp_path / f"gw{len(started)}"
        gw = LocalGateway(emulators_ or emulators, tenants or {"acme": {"key": "key-acme"}}, folder, **kw).start()
        started.append(gw)
        return gw

    yield make
    for gw in reversed(started):
        gw.stop()
