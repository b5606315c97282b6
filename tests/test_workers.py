"""`serve --workers N`: refused, with the setting to change, when a store it needs would be split
between worker processes; with Redis it runs, and every worker's log lines are JSON."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson

from gateway_dev.bench.common import OFFLINE_ENV
from gateway_dev.localrun import free_port, write_policies


def _env(tmp: Path, semantic: bool, **extra: str) -> dict[str, str]:
    tenant = {"key": "sk-w-0001", **({"semantic_cache": {"enabled": True}} if semantic else {})}
    write_policies(tmp / "policies", {"w": tenant})
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    return {**env, **OFFLINE_ENV, "GATEWAY_POLICIES": str(tmp / "policies"), "GATEWAY_DATA_DIR": str(tmp / "d"),
            **extra}


def _serve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", "serve", "--workers", "2", "--port", str(free_port()),
                           *args], env=env, capture_output=True, text=True, timeout=120)


def test_workers_without_redis_are_refused_naming_the_setting(tmp_path: Path) -> None:
    out = _serve(_env(tmp_path, semantic=False))
    assert out.returncode == 2
    assert "GATEWAY_REDIS_URL" in out.stderr and "--workers 2" in out.stderr


def test_workers_with_the_embedded_vector_store_are_refused(tmp_path: Path, redis_server) -> None:  # type: ignore[no-untyped-def]
    out = _serve(_env(tmp_path, semantic=True, GATEWAY_REDIS_URL=redis_server.url))
    assert out.returncode == 2
    assert "GATEWAY_QDRANT_URL" in out.stderr and "semantic cache" in out.stderr and "REDIS" not in out.stderr
    memory = _serve(_env(tmp_path, semantic=True, GATEWAY_REDIS_URL=redis_server.url, GATEWAY_QDRANT_URL=":memory:"))
    assert memory.returncode == 2 and "GATEWAY_QDRANT_URL" in memory.stderr


def test_two_workers_with_redis_serve_and_log_json(tmp_path: Path, redis_server) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    env = _env(tmp_path, semantic=False, GATEWAY_REDIS_URL=redis_server.url)
    log = open(tmp_path / "log", "w+")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--workers", "2", "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        ready = False
        while time.monotonic() < deadline and not ready:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                    ready = r.status == 200
            except OSError:
                time.sleep(0.3)
        assert ready, (tmp_path / "log").read_text()[-3000:]
        for _ in range(4):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
        log.close()
    lines = [line for line in (tmp_path / "log").read_text().splitlines() if line.strip()]
    assert lines
    parsed = [orjson.loads(line) for line in lines]  # every line, the supervisor's and the workers'
    assert len({p["pid"] for p in parsed}) >= 3  # the supervisor and both workers wrote JSON lines
