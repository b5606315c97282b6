"""LiteLLM's proxy as a benchmark peer: its own virtualenv, a config as its docs give it, one process.

The proxy pins its own FastAPI/uvicorn, so it lives in `.bench-venv/` (gitignored), made on first
use, never in the project's `.venv`. It runs offline: the local model-cost map, no database (no
`DATABASE_URL`: spend logs and key management are off), no background health checks (off unless
`background_health_checks: true`), its Redis response cache (`cache: true`, `cache_params.type:
redis`) on the same redis-server as the gateway (another namespace), one model pointing at the
same emulator the gateway uses, and a master key (so both sides authenticate every request).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from gateway_dev.localrun import free_port

VENV = Path(__file__).resolve().parents[2] / ".bench-venv"  # the repository root's, gitignored
SPEC = "litellm[proxy]==1.110.2"  # never 1.107.* (a compromised release)
# `litellm[proxy]==1.110.2` requires `litellm-proxy==1.110.2`, a package an index may not carry
# (this machine's does not). The fallback installs litellm itself (the proxy's code ships in it)
# with the proxy extra's own requirements and the modules `litellm.proxy.proxy_server` imports,
# at the versions that were resolved and checked here.
FALLBACK = [
    "litellm==1.110.2", "gunicorn==23.0.0", "uvicorn==0.54.0", "uvloop==0.23.0", "fastapi==0.165.0",
    "starlette==1.10.0", "backoff==2.2.1", "rq==2.12.0", "redis==8.1.0", "websockets==17.4", "orjson==3.13.0",
    "APScheduler==3.11.3", "PyJWT==2.15.1", "cryptography==50.0.2", "semver==3.1.2", "python-multipart==0.0.34",
    "email-validator==2.4.0", "Expression==5.8.0", "fastapi-sso==0.23.0", "mcp==2.3.0", "soundfile==0.14.0",
]
OFFLINE = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true", "LITELLM_LOG": "ERROR",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
MASTER_KEY = "sk-litellm-bench"


def ensure_venv(venv: Path = VENV, say=print) -> tuple[Path, str]:  # type: ignore[no-untyped-def]
    """The `litellm` executable of the benchmark venv (made on first use) and how it was installed."""
    exe = venv / "bin" / "litellm"
    marker = venv / "installed-as.txt"
    if exe.exists() and _proxy_imports(venv):
        return exe, marker.read_text().strip() if marker.exists() else "existing .bench-venv"
    say(f"creating {venv}/ with {SPEC} (first use; a few minutes)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    how = SPEC
    if subprocess.run([*pip, SPEC], capture_output=True, text=True).returncode != 0:
        how = f"litellm==1.110.2 + the proxy's dependencies ({SPEC} needs litellm-proxy, not on this index)"
        say(f"{SPEC} did not resolve here; installing {how}")
        subprocess.run([*pip, *FALLBACK], check=True)
    if not _proxy_imports(venv):
        raise RuntimeError(f"LiteLLM's proxy does not import in {venv}; see the pip output above")
    marker.write_text(how + "\n")
    return exe, how


def _proxy_imports(venv: Path) -> bool:
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import litellm.proxy.proxy_server"],
                           capture_output=True, env={**os.environ, **OFFLINE}, timeout=300)
    return probe.returncode == 0


def write_config(folder: Path, model: str, api_base: str, redis_host: str, redis_port: int,
                 namespace: str = "litellm-bench") -> Path:
    """The proxy config, following docs.litellm.ai/docs/proxy/caching and /proxy/prod."""
    config = {
        "model_list": [{"model_name": model,
                        "litellm_params": {"model": f"openai/{model}", "api_base": api_base, "api_key": "sk-bench"}}],
        "litellm_settings": {
            "cache": True,
            "cache_params": {"type": "redis", "host": redis_host, "port": redis_port, "namespace": namespace,
                             "supported_call_types": ["acompletion"]},
        },
        "general_settings": {"master_key": MASTER_KEY, "disable_spend_logs": True, "disable_error_logs": True,
                             "background_health_checks": False},
    }
    path = folder / "litellm-config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class LiteLLMProcess:
    """`litellm --config ... --num_workers N` on a loopback port, in its own process group."""

    def __init__(self, exe: Path, config: Path, workers: int = 1) -> None:
        self.exe, self.config, self.workers = exe, config, workers
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="litellm-bench-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_s = float("nan")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 300.0) -> LiteLLMProcess:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "VIRTUAL_ENV")}
        env.update(OFFLINE)
        self.log = open(self.dir / "litellm.log", "wb")  # noqa: SIM115 - closed in stop()
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [str(self.exe), "--config", str(self.config), "--host", "127.0.0.1", "--port", str(self.port),
             "--num_workers", str(self.workers)],
            cwd=self.dir, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("litellm exited: " + (self.dir / "litellm.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(f"{self.url}/health/readiness", timeout=1) as r:
                    if r.status == 200:
                        self.ready_s = time.monotonic() - started  # from the exec to /health/readiness 200
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError("litellm did not become ready")

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own group: uvicorn workers included
            self.proc.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        self.proc = None
        self.log.close()

    def __enter__(self) -> LiteLLMProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _tree(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(child for child, parent in parents.items() if parent == p)
    return out


def tree_rss_mib(pid: int | None) -> float:
    """Resident memory of a process and its descendants, MiB (Linux /proc; NaN elsewhere). Pages two
    processes share are counted in each (the multi-worker figure is an upper bound)."""
    if pid is None:
        return float("nan")
    total = 0
    try:
        for p in _tree(pid):
            try:
                for line in Path(f"/proc/{p}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                continue
    except OSError:
        return float("nan")
    return total / 1024


def tree_cpu_seconds(pid: int | None) -> float:
    """CPU time used by a process and its descendants (Linux /proc; NaN elsewhere): multi-worker
    servers spread the work over child processes."""
    if pid is None:
        return float("nan")
    try:
        stats: dict[int, tuple[int, float]] = {}
        tick = os.sysconf("SC_CLK_TCK")
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    except OSError:
        return float("nan")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            total += stats[p][1]
        todo.extend(child for child, (parent, _) in stats.items() if parent == p)
    return total
