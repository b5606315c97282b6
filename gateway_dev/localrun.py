"""Run the gateway (or any ASGI app) on a loopback port in a background thread, and write tenant
policy files: what the demo, the benchmarks and the end-to-end tests share."""

from __future__ import annotations

import asyncio
import hashlib
import random
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import uvicorn
import yaml

from gateway.tls_shutdown import HTTP as TLS_CLOSING_HTTP


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port(count: int = 1) -> int:
    """A loopback port N with N .. N+count-1 all free just now, for a server started next.

    Drawn at random below the kernel's ephemeral range: the port bind(0) hands out comes from that range, where
    the client side of every outgoing connection also takes its port, so between this check and the server's
    bind a busy test run's connection could take it (it did once, in CI, to the N+1 of an emulator process)."""
    floor = _ephemeral_floor()
    low = max(1024, floor - 12000)
    for _ in range(1000):
        port = random.randrange(low, floor - count + 1)
        socks = [socket.socket() for _ in range(count)]
        try:
            for i, s in enumerate(socks):
                s.bind(("127.0.0.1", port + i))
            return port
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {count} free consecutive loopback ports in {low}..{floor}")


class UvicornThread:
    """An ASGI app served by uvicorn on 127.0.0.1 in its own thread and event loop."""

    def __init__(self, app: Any, port: int | None = None, host: str = "127.0.0.1",
                 tls: tuple[str, str] | None = None) -> None:
        self.host = host
        self.port = port or free_port()
        self.tls = tls  # (certificate file, key file): serve HTTPS
        ssl = {"ssl_certfile": tls[0], "ssl_keyfile": tls[1]} if tls else {}
        config = uvicorn.Config(app, host=host, port=self.port, loop="asyncio", http=TLS_CLOSING_HTTP,
                                log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=10,
                                **ssl)
        self.server = uvicorn.Server(config)
        self.app = app
        self._thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> UvicornThread:
        def run() -> None:
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self.server.serve())

        self._thread = threading.Thread(target=run, name=f"uvicorn-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the server on port {self.port} failed to start")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the server on port {self.port} did not start in {timeout} s")
            time.sleep(0.01)
        # A gateway whose tenants use a lazily loaded layer is ready once it has loaded (/readyz).
        parts = getattr(getattr(self.app, "state", None), "components", None)
        while parts is not None and not parts.ready:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the gateway on port {self.port} was not ready in {timeout} s")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def call(self, coro: Any, timeout: float = 30.0) -> Any:
        """Run a coroutine on the server's loop (e.g. to inspect app state) and return its result."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def __enter__(self) -> UvicornThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def key_ref(key: str) -> str:
    """The policy-file reference of a plain key: `sha256:<hex>` (plain keys never go in files)."""
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def write_policies(folder: Path, tenants: Mapping[str, Mapping[str, Any]],
                   defaults: Mapping[str, Any] | None = None) -> Path:
    """Write one policy file per tenant. Each value holds `key` (plain, stored as its digest) or
    `keys`, plus any policy fields; `defaults` becomes `_defaults.yaml`."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.yaml"):
        old.unlink()
    if defaults:
        (folder / "_defaults.yaml").write_text(yaml.safe_dump(dict(defaults), sort_keys=False))
    for tenant, spec in tenants.items():
        fields = {k: v for k, v in spec.items() if k not in ("key", "keys")}
        keys = list(spec.get("keys", [])) + ([spec["key"]] if "key" in spec else [])
        doc = {"tenant": tenant, "api_keys": [key_ref(k) for k in keys], **fields}
        (folder / f"{tenant}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


class LocalGateway:
    """The gateway on a loopback port, pointed at a running `EmulatorSet` (tests, demo, benchmarks).

    `tenants` maps tenant names to policy fields plus `key` (plain; written as its digest). Extra
    keyword arguments are `Settings` fields (e.g. `redis_url`). `stages`, when given, replaces the
    assembled layers (a test of one layer in isolation)."""

    def __init__(self, emulators: Any, tenants: Mapping[str, Mapping[str, Any]], folder: Path,
                 defaults: Mapping[str, Any] | None = None, stages: list[Any] | None = None,
                 port: int | None = None, tls: tuple[str, str] | None = None, **settings: Any) -> None:
        from gateway.config import Settings

        self.emulators = emulators
        self.folder = folder
        write_policies(folder / "policies", tenants, defaults)
        base = {
            "policies": folder / "policies", "data_dir": folder / "data",
            "openai_base_url": emulators.openai_base_url, "anthropic_base_url": emulators.anthropic_base_url,
            "gemini_base_url": emulators.gemini_base_url, "deepseek_base_url": emulators.deepseek_base_url,
            "openai_api_key": "sk-gateway-openai", "anthropic_api_key": "sk-gateway-anthropic",
            "gemini_api_key": "gateway-gemini-key", "deepseek_api_key": "sk-gateway-deepseek",
            "vllm_endpoints": list(emulators.vllm_urls),
        }
        base.update(settings)
        self.settings = Settings.load(env={}, **base)
        self._stages = stages
        self._port = port
        self._tls = tls  # (certificate, key): serve HTTPS (boto3 sends a Bedrock API key only over TLS)
        self.server: UvicornThread | None = None

    def start(self) -> LocalGateway:
        from gateway.app import create_app
        from gateway.assembly import build_components

        self.components = build_components(self.settings, stages=self._stages)
        self.app = create_app(self.settings, self.components)
        self.server = UvicornThread(self.app, port=self._port, tls=self._tls).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> LocalGateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    def call(self, coro: Any, timeout: float = 30.0) -> Any:
        assert self.server is not None
        return self.server.call(coro, timeout)

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until every request's post-stages (usage, cache writes) have run."""
        self.call(self.components.gateway.drain(timeout), timeout + 5)

    # official SDK clients pointed at the gateway
    def openai(self, key: str, **kw: Any) -> Any:
        import openai

        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=key, max_retries=0, **kw)

    def anthropic(self, key: str, **kw: Any) -> Any:
        import anthropic

        return anthropic.Anthropic(base_url=self.url, api_key=key, max_retries=0, **kw)

    def gemini(self, key: str, api_version: str | None = None) -> Any:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(base_url=self.url, api_version=api_version) if api_version \
            else types.HttpOptions(base_url=self.url)
        return genai.Client(api_key=key, http_options=options)
