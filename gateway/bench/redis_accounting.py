"""What the gateway asks of Redis, per request and by layer (for `bench load` and docs/deploy.md).

Two measurements, each from Redis itself:
- `ServerStats`: `INFO stats` and the server process's CPU time (/proc) before and after a phase:
  commands, bytes in and out, and Redis CPU per request, at full load and without any tracing;
- `Monitor`: `redis-cli monitor` during a shorter pass, every command with its key, classified
  into layers by key prefix (the layers' key formats: cache/key.py, usage/keys.py, provider_cache/,
  routing/sessions.py, cached_contents.py). Commands run inside a Lua script are counted apart:
  they are not round trips. MONITOR slows Redis down, which is why throughput is measured without it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from redis import Redis

LAYERS = (  # key prefix → layer (first match wins)
    ("gw:rcl:", "response cache: single-flight lock"),
    ("gw:rc:", "response cache: entries"),
    ("usage:", "usage"),
    ("gw:pc:", "provider cache"),
    ("gw:route:", "routing"),
    ("gw:ccown:", "cachedContents ownership"),
)
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\x[0-9a-fA-F]{2}|\\.")


def layer_of(key: str) -> str:
    return next((name for prefix, name in LAYERS if key.startswith(prefix)), "other")


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process (Linux /proc), NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return float("nan")


@dataclass
class ServerStats:
    commands: int
    net_in: int
    net_out: int
    cpu: float

    @classmethod
    def read(cls, client: Redis, pid: int | None) -> ServerStats:
        info = client.info("stats")
        return cls(int(info["total_commands_processed"]), int(info["total_net_input_bytes"]),
                   int(info["total_net_output_bytes"]), cpu_seconds(pid))

    def per_request(self, later: ServerStats, requests: int) -> dict[str, float]:
        n = max(1, requests)
        return {"commands": (later.commands - self.commands) / n, "bytes_in": (later.net_in - self.net_in) / n,
                "bytes_out": (later.net_out - self.net_out) / n, "cpu_ms": (later.cpu - self.cpu) * 1000 / n}


@dataclass
class Traced:
    commands: Counter[str] = field(default_factory=Counter)  # layer → commands sent by the gateway
    scripted: Counter[str] = field(default_factory=Counter)  # layer → commands run inside Lua scripts
    arg_bytes: Counter[str] = field(default_factory=Counter)  # layer → bytes of keys and values sent
    names: Counter[str] = field(default_factory=Counter)  # "layer COMMAND" → count

    def add_line(self, line: str) -> None:
        head, _, rest = line.partition("] ")
        tokens = _TOKEN.findall(rest)
        if not tokens or "[" not in head:
            return
        name = tokens[0].upper()
        key_at = 3 if name in ("EVALSHA", "EVAL") else 1
        layer = layer_of(_unescape(tokens[key_at])) if len(tokens) > key_at else "other"
        if head.endswith(" lua"):
            self.scripted[layer] += 1
            return
        self.commands[layer] += 1
        self.names[f"{layer} {name}"] += 1
        self.arg_bytes[layer] += sum(len(_unescape(t)) for t in tokens[1:])


def _unescape(token: str) -> str:
    # MONITOR quotes arguments C-style: each escape stands for one byte.
    return _ESCAPE.sub("_", token)


class Monitor:
    """`redis-cli -p PORT monitor` into a file while the block runs; `.traced` after it."""

    def __init__(self, port: int, settle: float = 1.2) -> None:
        self.port = port
        self.settle = settle  # seconds to keep tracing after the block: the usage flush runs every 0.5 s
        self.traced = Traced()
        self._dir = tempfile.mkdtemp(prefix="gw-monitor-")
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Monitor:
        exe = shutil.which("redis-cli")
        if exe is None:
            raise RuntimeError("redis-cli is not installed (apt-get install -y redis-tools)")
        self._out = open(Path(self._dir) / "monitor.log", "wb")
        self._proc = subprocess.Popen([exe, "-p", str(self.port), "monitor"], stdout=self._out,
                                      stderr=subprocess.DEVNULL)
        time.sleep(0.3)  # MONITOR is registered before the first command we want to see
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(self.settle)
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
        self._out.close()
        with open(Path(self._dir) / "monitor.log", encoding="utf-8", errors="replace") as f:
            for line in f:
                self.traced.add_line(line)
        shutil.rmtree(self._dir, ignore_errors=True)


def entry_bytes(client: Redis, prefix: str, sample: int = 200) -> tuple[float, float]:
    """Mean value length and mean `MEMORY USAGE` (bytes) of up to `sample` keys under `prefix`."""
    lengths: list[int] = []
    usage: list[int] = []
    for key in client.scan_iter(match=prefix + "*", count=1000):
        lengths.append(int(client.strlen(key)))
        usage.append(int(client.memory_usage(key) or 0))
        if len(lengths) >= sample:
            break
    if not lengths:
        return float("nan"), float("nan")
    return sum(lengths) / len(lengths), sum(usage) / len(usage)
