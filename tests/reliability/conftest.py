"""Fixtures of the reliability suite: a durable redis-server to kill, tenants, sizes.

Every test runs in a short size by default (a few seconds each) and a long one marked `slow`:

    .venv/bin/pytest tests/reliability -q              # short: part of the default run and .ci/run
    .venv/bin/pytest tests/reliability -q -m slow      # long: bigger loads, repeated outages
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway_dev.localrun import free_port

ADMIN = "admin-reliability"
KEYS = {"t1": "key-reliability-t1", "t2": "key-reliability-t2"}
# `upstream_keys: passthrough`: the emulator records each upstream call under the tenant's own key,
# so an answer a tenant got without any upstream call of its own (another tenant's) is visible.
TENANTS = {name: {"key": key, "upstream_keys": "passthrough"} for name, key in KEYS.items()}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "reliability: outage, fault and lifecycle scenarios under load")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/reliability/" in str(item.fspath):
            item.add_marker(pytest.mark.reliability)


@dataclass(frozen=True)
class Size:
    name: str
    prompts: int
    repeats: int
    concurrency: int
    cycles: int = 1  # outages per run


SHORT = Size("short", prompts=10, repeats=4, concurrency=8)
LONG = Size("long", prompts=60, repeats=10, concurrency=24, cycles=3)
SIZES = [pytest.param(SHORT, id="short"), pytest.param(LONG, id="long", marks=pytest.mark.slow)]


@dataclass
class DurableRedis:
    """A redis-server that writes every command to its append-only file before answering
    (`appendfsync always`), so SIGKILL loses nothing it acknowledged: what goes missing after a
    restart was lost by the gateway, not by Redis. `stop()` kills it by pid, like a crash."""

    port: int
    dir: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None

    def start(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail("redis-server is not installed (apt-get install -y redis-server); .ci/run installs it")
        self.proc = subprocess.Popen(
            [exe, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "yes",
             "--appendfsync", "always", "--dir", str(self.dir), "--logfile", str(self.dir / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server did not start on port {self.port}")


@pytest.fixture
def durable_redis() -> Iterator[DurableRedis]:
    with tempfile.TemporaryDirectory(prefix="gw-redis-aof-") as d:
        server = DurableRedis(port=free_port(), dir=Path(d))
        server.start()
        try:
            yield server
        finally:
            server.stop()


async def until(condition: Callable[[], bool], within: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
