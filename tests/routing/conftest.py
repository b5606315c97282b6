"""Live emulated vLLM replicas (gateway/emulators/vllm_app.py) served by uvicorn on real ports, which a
test can kill (the port then refuses connections) and restart (same port, empty cache: a new process)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import uvicorn

from gateway.emulators.faults import FaultController
from gateway.emulators.latency import LatencyModel
from gateway.emulators.vllm_app import VLLMConfig, VLLMReplica
from gateway.emulators.web import EmulatorState

MODEL = "Qwen/Qwen3-8B"


@dataclass
class Served:
    port: int
    config: VLLMConfig
    replica: VLLMReplica | None = None
    server: uvicorn.Server | None = None
    task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def name(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Fleet:
    state: EmulatorState = field(default_factory=lambda: EmulatorState(latency=LatencyModel().zero()))
    served: list[Served] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.served]

    def by_name(self, name: str) -> Served:
        return next(s for s in self.served if s.name == name)

    async def add(self, n: int, **config: object) -> None:
        for _ in range(n):
            s = Served(free_port(), VLLMConfig(**config))  # type: ignore[arg-type]
            self.served.append(s)
            await self.start(s)

    async def start(self, s: Served) -> None:
        s.replica = VLLMReplica(self.state, FaultController(), s.config, index=self.served.index(s))
        s.server = uvicorn.Server(uvicorn.Config(s.replica.app, host="127.0.0.1", port=s.port, log_level="warning",
                                                 access_log=False, lifespan="off"))
        s.server.capture_signals = _no_signals  # type: ignore[method-assign]
        s.task = asyncio.create_task(s.server.serve())
        while not s.server.started:
            if s.task.done():
                s.task.result()
            await asyncio.sleep(0.01)

    async def kill(self, s: Served) -> None:
        assert s.server is not None and s.task is not None
        s.server.should_exit = s.server.force_exit = True
        await s.task
        s.server = s.task = None

    async def close(self) -> None:
        for s in self.served:
            if s.server is not None:
                await self.kill(s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _no_signals:  # stands in for uvicorn's signal capture: the test process owns the signals
    def __init__(self, *args: object) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


@pytest.fixture
async def fleet() -> AsyncIterator[Fleet]:
    f = Fleet()
    try:
        yield f
    finally:
        await f.close()
