"""Run the gateway (or any ASGI app) on a loopback port in a background thread, and write tenant
policy files: what the demo, the benchmarks and the end-to-end tests share."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import uvicorn
import yaml


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class UvicornThread:
    """An ASGI app served by uvicorn on 127.0.0.1 in its own thread and event loop."""

    def __init__(self, app: Any, port: int | None = None, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port or free_port()
        config = uvicorn.Config(app, host=host, port=self.port, loop="asyncio", http="httptools",
                                log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=10)
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

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
