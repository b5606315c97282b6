"""`EmulatorProcess`: the emulators in a subprocess, so in a benchmark they do not share the gateway's CPU
and GIL. Controlled over HTTP (`/_emulator/*`), stopped with SIGTERM.

    with EmulatorProcess(vllm_replicas=2, latency="realistic", extra_args=["--kv-capacity-blocks", "512"]) as emu:
        emu.vendor_url, emu.vllm_urls
        emu.inject_fault("openai", "status=503", count=2); emu.advance_clock(600); emu.calls("vllm0.chat")
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from typing import Any


class EmulatorProcess:
    def __init__(self, *, vllm_replicas: int = 0, latency: str = "zero", port: int = 0,
                 extra_args: Sequence[str] = (), env: dict[str, str] | None = None, startup_timeout: float = 60.0,
                 python: str = sys.executable) -> None:
        self.args = [python, "-m", "gateway_dev.emulators", "--port", str(port), "--vllm-replicas", str(vllm_replicas),
                     "--latency", latency, *extra_args]
        self.env = {**os.environ, **(env or {})}
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.info: dict[str, Any] = {}
        self.output: list[str] = []

    def start(self) -> EmulatorProcess:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=self.env)
        found = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                self.output.append(line.rstrip("\n"))
                if line.startswith("EMULATORS "):
                    self.info = json.loads(line[len("EMULATORS "):])
                    found.set()

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout
        while not found.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("emulator process did not start:\n" + "\n".join(self.output[-30:]))
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: the server stops cleanly
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- URLs -----------------------------------------------------------------------------------------
    @property
    def vendor_url(self) -> str:
        return str(self.info["vendor_url"])

    @property
    def openai_base_url(self) -> str:
        return str(self.info["openai_base_url"])

    @property
    def vllm_urls(self) -> list[str]:
        """Every engine replica (vLLM first, then SGLang)."""
        return list(self.info["vllm_urls"])

    @property
    def kv_events_endpoints(self) -> list[str | None]:
        return list(self.info.get("kv_events_endpoints", []))

    @property
    def sglang_urls(self) -> list[str]:
        return list(self.info.get("sglang_urls", []))

    # -- control --------------------------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any], root: str | None = None) -> dict[str, Any]:
        req = urllib.request.Request((root or self.vendor_url) + path, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def state(self, root: str | None = None) -> dict[str, Any]:
        with urllib.request.urlopen((root or self.vendor_url) + "/_emulator/state", timeout=10) as resp:
            return json.loads(resp.read())

    def calls(self, name: str) -> int:
        return int(self.state()["counts"].get(name, 0))

    def advance_clock(self, seconds: float) -> float:
        return float(self._post("/_emulator/clock", {"advance": seconds})["clock"])

    def inject_fault(self, emulator: str, fault: str, count: int = 1) -> None:
        root = None
        if emulator.startswith("vllm"):
            root = self.vllm_urls[int(emulator[4:] or 0)]
        self._post("/_emulator/faults", {"emulator": emulator, "fault": fault, "count": count}, root)

    def set_latency(self, spec: str) -> dict[str, Any]:
        return self._post("/_emulator/latency", {"spec": spec})

    def reset(self, caches: bool = False) -> None:
        self._post("/_emulator/reset", {"cache": caches})
        if caches:
            for url in self.vllm_urls:
                self._post("/_emulator/reset", {"cache": True}, url)
