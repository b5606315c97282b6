"""The routers users would pick instead of ours, as `bench routing --against` peers: SGLang Model Gateway
(`sglang-router`, its `smg launch`) and vLLM's router (`vllm-router`), both with `--policy cache_aware`.

They are installed from the package registry at pinned versions into the benchmark's own virtualenv,
`.bench-venv-routers/` (gitignored, made on first use, never the project's `.venv`), and started on free
loopback ports in front of the same emulator replicas as ours. sglang-router runs its default backend (the
`--backend openai` mode ignores `--policy`); at start it probes each worker's server info and tolerates the
404s of endpoints an OpenAI-compatible replica lacks. vllm-router's cache_aware asks each worker for the
prompt's token ids (`POST /v1/chat/completions/render`, which the vLLM emulator answers as vLLM does).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

VENV = Path(__file__).resolve().parents[2] / ".bench-venv-routers"
PINS = {"sglang-router": "sglang-router==0.3.2", "vllm-router": "vllm-router==0.1.17"}
MODEL = "Qwen/Qwen3-8B"


def ensure_venv(names: list[str], venv: Path = VENV, say: Any = print) -> Path:
    """The venv with the pinned routers `names` installed (made or completed on first use)."""
    unknown = set(names) - set(PINS)
    if unknown:
        raise ValueError(f"unknown routers {sorted(unknown)}; known: {', '.join(PINS)}")
    if not (venv / "bin" / "python").exists():
        say(f"creating {venv}/ for {', '.join(PINS[n] for n in names)} (first use)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    missing = [PINS[n] for n in names if not _installed(venv, PINS[n])]
    if missing:
        say(f"installing {' '.join(missing)} into {venv}/")
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *missing], check=True)
    return venv


def _installed(venv: Path, pin: str) -> bool:
    name, _, version = pin.partition("==")
    probe = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "show", name], capture_output=True,
                           text=True)
    return probe.returncode == 0 and f"Version: {version}" in probe.stdout


def command(name: str, venv: Path, urls: list[str], port: int, metrics_port: int) -> list[str]:
    """How each router is started: its cache_aware policy with its CLI defaults (thresholds, tree size)."""
    common = ["--host", "127.0.0.1", "--port", str(port), "--prometheus-port", str(metrics_port),
              "--worker-urls", *urls, "--policy", "cache_aware"]
    if name == "sglang-router":
        return [str(venv / "bin" / "smg"), "launch", *common, "--log-level", "warn"]
    return [str(venv / "bin" / "vllm-router"), *common, "--log-level", "warning"]


class PeerRouter:
    """One router process; `url` is its OpenAI base URL once `start()` returned."""

    def __init__(self, name: str, urls: list[str], venv: Path = VENV) -> None:
        self.name, self.urls, self.venv = name, urls, venv
        self.proc: subprocess.Popen[bytes] | None = None
        fd, path = tempfile.mkstemp(prefix=f"bench-{name}-", suffix=".log")
        self.log, self.log_path = os.fdopen(fd, "wb"), path

    def start(self, timeout: float = 60.0) -> None:
        from gateway_dev.localrun import free_port

        self.port = free_port()
        cmd = command(self.name, self.venv, self.urls, self.port, free_port())
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        deadline = time.monotonic() + timeout
        while True:  # ready when a request goes through (the workers are registered asynchronously)
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} did not start: {self.tail()}")
            if _answers(self.url):
                return
            time.sleep(0.3)

    def tail(self, n: int = 2000) -> str:
        return Path(self.log_path).read_text(errors="replace")[-n:]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None


def _answers(base: str) -> bool:
    body = b'{"model": "%s", "messages": [{"role": "user", "content": "ready?"}], "max_tokens": 1}' % MODEL.encode()
    req = urllib.request.Request(base + "/chat/completions", data=body, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


class PeerTarget:
    """A peer router as a `bench routing` target (the same client path as ours through the gateway)."""

    def __init__(self, http: Any, name: str, urls: list[str]) -> None:
        self.http, self.peer = http, PeerRouter(name, urls)

    async def start(self) -> None:
        await asyncio.to_thread(self.peer.start)

    async def stop(self) -> None:
        await asyncio.to_thread(self.peer.stop)

    async def call(self, body: dict[str, Any], out: int) -> tuple[int, str, float]:
        import aiohttp

        from gateway_dev.bench.routing_targets import _failed, _send

        try:
            return await _send(self.http, self.peer.url, body, out)
        except (TimeoutError, aiohttp.ClientError) as exc:
            _failed(exc)
            return 599, "", 0.0
