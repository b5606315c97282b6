"""Start the emulators from tests, the demo and benchmarks.

`EmulatorSet` runs the vendor app and K vLLM replicas with uvicorn on free loopback ports, in one background
thread with its own event loop, inside the caller's process, so a test can move `clock`, change `latency`,
queue `faults` and read the call counters directly. Use it as a context manager, sync or async:

    with EmulatorSet(vllm_replicas=2) as emu:
        client = openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-test")
        ...
        emu.clock.advance(301)
        assert emu.calls("openai.chat") == 1

`EmulatorProcess` (process.py) runs the same thing in a subprocess for benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

import uvicorn

from gateway_dev.emulators.clock import Clock
from gateway_dev.emulators.faults import Faults
from gateway_dev.emulators.latency import LatencyModel, parse_latency
from gateway_dev.emulators.platform_app import PlatformEmulators
from gateway_dev.emulators.sglang_app import SGLangReplica
from gateway_dev.emulators.tokens import get_tokenizer
from gateway_dev.emulators.vendor import VendorEmulators
from gateway_dev.emulators.vllm_app import VLLMConfig, VLLMReplica
from gateway_dev.emulators.web import EmulatorState, Recorded, RequestLog

log = logging.getLogger(__name__)


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


class _Served:
    """One uvicorn server on one socket, run on the set's loop."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        self.sock = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, http="httptools",
                                timeout_graceful_shutdown=1, timeout_keep_alive=30, backlog=4096)
        self.server = uvicorn.Server(config)
        self.future: Future[None] | None = None

    def abort_connections(self) -> None:
        for conn in list(self.server.server_state.connections):
            transport = getattr(conn, "transport", None)
            if transport is not None:
                transport.abort()


class EmulatorSet:
    def __init__(self, *, vllm_replicas: int = 0, latency: LatencyModel | str | None = None,
                 frozen_clock: bool = True, valid_keys: set[str] | None = None, output_tokens: int = 40,
                 vllm: VLLMConfig | None = None, vllm_configs: list[VLLMConfig] | None = None,
                 host: str = "127.0.0.1", port: int = 0, vllm_ports: list[int] | None = None,
                 platform_port: int = 0) -> None:
        if isinstance(latency, str):
            latency = parse_latency(latency)
        self.state = EmulatorState(clock=Clock(frozen=frozen_clock), latency=latency or LatencyModel(),
                                   valid_keys=valid_keys, output_tokens=output_tokens)
        configs = vllm_configs or [_copy(vllm) for _ in range(vllm_replicas)]
        self.faults = Faults(len(configs))
        self.vendors = VendorEmulators(self.state, self.faults)
        # Engine replicas, each of its config's engine (vLLM or SGLang); `vllm_urls` lists them all, in order.
        self.replicas = [(SGLangReplica if c.engine == "sglang" else VLLMReplica)(self.state, self.faults.vllm[i], c,
                                                                                   index=i)
                         for i, c in enumerate(configs)]
        # Azure OpenAI, Vertex AI and Bedrock on a port of their own (another host each in production).
        self.platforms = PlatformEmulators(self.state)
        self._platform_port = platform_port
        self._platform: _Served | None = None
        self.host = host
        self._port = port
        self._vllm_ports = vllm_ports or [0] * len(configs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._vendor: _Served | None = None
        self._vllm: list[_Served | None] = []

    # -- shared objects -------------------------------------------------------------------------------
    @property
    def clock(self) -> Clock:
        return self.state.clock

    @property
    def latency(self) -> LatencyModel:
        return self.state.latency

    @property
    def log(self) -> RequestLog:
        return self.state.log

    def calls(self, name: str) -> int:
        """Upstream calls received by an endpoint ("openai.chat", "anthropic.messages",
        "gemini.generateContent", "deepseek.chat", "vllm0.chat") or a whole emulator ("openai", "vllm1")."""
        return self.state.log.count(name)

    def requests(self, name: str | None = None) -> list[Recorded]:
        return self.state.log.requests(name)

    def reset(self, *, caches: bool = False) -> None:
        """Forget the call counters and recorded requests (and, with caches=True, every cache)."""
        self.state.log.reset()
        self.faults.clear_all()
        self.platforms.faults.clear_all()
        if caches:
            self.vendors.clear_caches()
            self.platforms.clear_caches()
            for r in self.replicas:
                r.reset()

    # -- URLs -----------------------------------------------------------------------------------------
    @property
    def vendor_url(self) -> str:
        assert self._vendor is not None, "EmulatorSet is not started"
        return f"http://{self.host}:{self._vendor.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.vendor_url}/v1"

    @property
    def deepseek_base_url(self) -> str:
        return f"{self.vendor_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.vendor_url

    @property
    def gemini_base_url(self) -> str:
        return self.vendor_url

    @property
    def platform_url(self) -> str:
        """The cloud-platform emulators' root: Azure OpenAI endpoint (`azure_endpoint=`), Vertex AI base URL and
        token endpoint (`{platform_url}/token`), Bedrock runtime endpoint (`endpoint_url=`)."""
        assert self._platform is not None, "EmulatorSet is not started"
        return f"http://{self.host}:{self._platform.port}"

    @property
    def vllm_urls(self) -> list[str]:
        return [f"http://{self.host}:{p}" for p in self.vllm_ports]

    @property
    def sglang_urls(self) -> list[str]:
        return [u for u, r in zip(self.vllm_urls, self.replicas, strict=True) if r.config.engine == "sglang"]

    @property
    def vllm_ports(self) -> list[int]:
        return [s.port if s is not None else p for s, p in zip(self._vllm, self._vllm_ports, strict=True)]

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> EmulatorSet:
        if self._thread is not None:
            return self
        get_tokenizer()  # load o200k once, before the first request pays for it
        self._loop = _new_loop()
        ready = threading.Event()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.call_soon(ready.set)
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="emulators", daemon=True)
        self._thread.start()
        ready.wait()
        self._vendor = self._serve(self.vendors.app, self._port)
        self._platform = self._serve(self.platforms.app, self._platform_port)
        self._vllm = [None] * len(self.replicas)
        for i in range(len(self.replicas)):
            self.start_vllm(i, fresh=False)
        return self

    def _serve(self, app: Any, port: int) -> _Served:
        assert self._loop is not None
        served = _Served(app, _bind(self.host, port))
        served.future = asyncio.run_coroutine_threadsafe(served.server.serve(sockets=[served.sock]), self._loop)
        deadline = time.monotonic() + 10
        while not served.server.started:
            if served.future.done():
                served.future.result()  # raises the startup error
            if time.monotonic() > deadline:
                raise RuntimeError(f"emulator server on port {served.port} did not start")
            time.sleep(0.002)
        return served

    def _shutdown(self, served: _Served, abrupt: bool) -> None:
        assert self._loop is not None
        served.server.should_exit = True
        served.server.force_exit = True
        if abrupt:
            self._loop.call_soon_threadsafe(served.abort_connections)
        if served.future is not None:
            with contextlib.suppress(Exception):
                served.future.result(timeout=10)
        served.sock.close()

    def stop_vllm(self, index: int, *, abrupt: bool = True) -> None:
        """Take replica `index` down: its port refuses connections; with abrupt=True (a crash) open connections
        are reset too."""
        served = self._vllm[index]
        if served is not None:
            self._vllm_ports[index] = served.port
            self._shutdown(served, abrupt)
            self._vllm[index] = None

    def start_vllm(self, index: int, *, fresh: bool = True) -> None:
        """Bring replica `index` (back) up on its port; fresh=True empties its prefix cache and stats, as a
        restarted vLLM has."""
        if self._vllm[index] is not None:
            return
        replica = self.replicas[index]
        if fresh:
            replica.reset()
        self._vllm[index] = self._serve(replica.app, self._vllm_ports[index])
        self._vllm_ports[index] = self._vllm[index].port  # type: ignore[union-attr]

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        servers = [s for s in [self._vendor, self._platform, *self._vllm] if s is not None]
        for s in servers:
            s.server.should_exit = True
            s.server.force_exit = True
        for s in servers:
            self._shutdown(s, abrupt=False)
        self._loop.call_soon_threadsafe(self._loop.stop)
        for replica in self.replicas:
            if replica.events is not None:
                replica.events.close()
        self._thread.join(timeout=10)
        self._loop.close()
        self._thread = self._loop = None
        self._vendor = None
        self._platform = None
        self._vllm = []

    def __enter__(self) -> EmulatorSet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> EmulatorSet:
        await asyncio.get_running_loop().run_in_executor(None, self.start)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.stop)

    def describe(self) -> dict[str, Any]:
        return {"vendor_url": self.vendor_url, "openai_base_url": self.openai_base_url,
                "anthropic_base_url": self.anthropic_base_url, "gemini_base_url": self.gemini_base_url,
                "deepseek_base_url": self.deepseek_base_url, "vllm_urls": self.vllm_urls,
                "sglang_urls": self.sglang_urls,
                "kv_events_endpoints": [r.kv_events_endpoint for r in self.replicas],
                "platform_url": self.platform_url}


def _copy(config: VLLMConfig | None) -> VLLMConfig:
    if config is None:
        return VLLMConfig()
    return replace(config, served_model_names=list(config.served_model_names))


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop ships with uvicorn[standard]
        return asyncio.new_event_loop()
