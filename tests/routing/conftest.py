"""Live emulated vLLM replicas (the emulator helper's `EmulatorSet`), which a test can kill (the port then
refuses connections and open ones are reset) and restart (same port, empty cache: a new process)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.emulators.vllm_app import VLLMConfig

MODEL = "Qwen/Qwen3-8B"


class Fleet:
    def __init__(self, emu: EmulatorSet) -> None:
        self.emu = emu

    @property
    def urls(self) -> list[str]:
        return self.emu.vllm_urls

    def index(self, name: str) -> int:
        """The replica index of a pool member name (host:port)."""
        return self.emu.vllm_ports.index(int(name.rsplit(":", 1)[1]))

    def url(self, name: str) -> str:
        return self.urls[self.index(name)]

    async def kill(self, name: str) -> None:
        await asyncio.to_thread(self.emu.stop_vllm, self.index(name), abrupt=True)

    async def restart(self, name: str) -> None:
        await asyncio.to_thread(self.emu.start_vllm, self.index(name), fresh=True)


@pytest.fixture
async def fleet() -> AsyncIterator[Callable[..., Awaitable[Fleet]]]:
    """`await fleet(n, **VLLMConfig fields)`: n replicas serving MODEL, zero latency unless a request asks."""
    started: list[EmulatorSet] = []

    async def make(n: int, **config: object) -> Fleet:
        configs = [VLLMConfig(served_model_names=[MODEL], **config) for _ in range(n)]  # type: ignore[arg-type]
        emu = EmulatorSet(vllm_configs=configs, latency="zero")
        await emu.__aenter__()
        started.append(emu)
        return Fleet(emu)

    try:
        yield make
    finally:
        for emu in started:
            await emu.__aexit__(None, None, None)
