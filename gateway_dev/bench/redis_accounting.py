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
    def read(cls, nodes: list[tuple[int, int | None]]) -> ServerStats:
        """Summed over the servers `(port, pid)` (one, or a cluster's primaries)."""
        total = cls(0, 0, 0, 0.0)
        for port, pid in nodes:
            with Redis(port=port, socket_timeout=10) as client:
                info = client.info("stats")
            total.commands += int(info["total_commands_processed"])
            total.net_in += int(info["total_net_input_bytes"])
            total.net_out += int(info["total_net_output_bytes"])
            total.cpu += cpu_seconds(pid)
        return total

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
    flushes: int = 0  # usage flushes seen (one LPUSH to the global record log each)
    _open: dict[str, int] = field(default_factory=dict)  # client → MULTIs waiting for their first keyed command
    _last: dict[str, str] = field(default_factory=dict)  # client → layer of its last keyed command

    def add_line(self, line: str) -> None:
        head, _, rest = line.partition("] ")
        tokens = _TOKEN.findall(rest)
        if not tokens or "[" not in head:
            return
        client = head.rpartition(" ")[2]
        name = tokens[0].upper()
        if client == "lua":
            self.scripted[self._layer(name, tokens)] += 1
            return
        if name == "MULTI":  # framing of a transaction: the layer of the commands inside it
            self._open[client] = self._open.get(client, 0) + 1
            return
        layer = self._last.get(client, "other") if name == "EXEC" else self._layer(name, tokens)
        if name != "EXEC":
            self._last[client] = layer
            for _ in range(self._open.pop(client, 0)):
                self._count(layer, "MULTI", 0)
        if name == "LPUSH" and len(tokens) > 1 and tokens[1] == "usage:records":
            self.flushes += 1
        self._count(layer, name, sum(len(_unescape(t)) for t in tokens[1:]))

    def _count(self, layer: str, name: str, size: int) -> None:
        self.commands[layer] += 1
        self.names[f"{layer} {name}"] += 1
        self.arg_bytes[layer] += size

    @staticmethod
    def _layer(name: str, tokens: list[str]) -> str:
        key_at = 3 if name in ("EVALSHA", "EVAL") else 1
        return layer_of(_unescape(tokens[key_at])) if len(tokens) > key_at else "other"


def _unescape(token: str) -> str:
    # MONITOR quotes arguments C-style: each escape stands for one byte.
    return _ESCAPE.sub("_", token)


class Monitor:
    """`redis-cli -p PORT monitor` for each server into files while the block runs; `.traced` after."""

    def __init__(self, ports: list[int], settle: float = 1.2) -> None:
        self.ports = ports
        self.settle = settle  # seconds to keep tracing after the block: the usage flush runs every 0.5 s
        self.traced = Traced()
        self._dir = Path(tempfile.mkdtemp(prefix="gw-monitor-"))
        self._procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Monitor:
        exe = shutil.which("redis-cli")
        if exe is None:
            raise RuntimeError("redis-cli is not installed (apt-get install -y redis-tools)")
        for port in self.ports:
            with open(self._dir / f"{port}.log", "wb") as out:  # the child keeps its own descriptor
                self._procs.append(subprocess.Popen([exe, "-p", str(port), "monitor"], stdout=out,
                                                    stderr=subprocess.DEVNULL))
        time.sleep(0.3)  # MONITOR is registered before the first command we want to see
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(self.settle)
        for proc in self._procs:
            proc.terminate()
            proc.wait(10)
        for port in self.ports:
            with open(self._dir / f"{port}.log", encoding="utf-8", errors="replace") as f:
                for line in f:
                    self.traced.add_line(line)
        shutil.rmtree(self._dir, ignore_errors=True)


def entry_bytes(ports: list[int], prefix: str, sample: int = 200) -> tuple[float, float]:
    """Mean value length and mean `MEMORY USAGE` (bytes) of up to `sample` keys under `prefix`."""
    lengths: list[int] = []
    usage: list[int] = []
    for port in ports:
        with Redis(port=port, socket_timeout=10) as client:
            for key in client.scan_iter(match=prefix + "*", count=1000):
                lengths.append(int(client.strlen(key)))
                usage.append(int(client.memory_usage(key) or 0))
                if len(lengths) >= sample:
                    break
    if not lengths:
        return float("nan"), float("nan")
    return sum(lengths) / len(lengths), sum(usage) / len(usage)
