"""Real Redis topologies on loopback for the scale-out tests and the load benchmark: a single
server, a Redis Cluster (`redis-server --cluster-enabled yes` joined with
`redis-cli --cluster create`) and a Sentinel setup (primary, replica, Sentinels). Every process is
started here on a free port and stopped by its pid; nothing else on the machine is touched.

Cluster nodes run with `cluster-require-full-coverage no` (a dead shard fails only its own slots,
the setting production clusters use for a cache) and a short `cluster-node-timeout`, so a killed
primary is replaced within seconds.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from redis import Redis
from redis.crc import key_slot
from redis.exceptions import RedisError

from gateway_dev.localrun import free_port


def _exe(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} is not installed (apt-get install -y redis-server)")
    return path


def poll(condition: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Whether `condition` came true within `timeout` seconds (checked every `interval`)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    if not poll(condition, timeout, interval):
        raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")


# No persistence; a replica's first sync starts at once (Redis 7 holds a diskless sync 5 s by default, for
# more replicas to join the same transfer: 5 s of every Sentinel fixture's start).
_NODE_ARGS = ["--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"]


class RedisNode:
    """One redis-server (or Sentinel) process with its own folder."""

    def __init__(self, folder: Path, args: list[str], port: int | None = None, sentinel: bool = False,
                 password: str | None = None) -> None:
        self.port = port or free_port()
        self.dir = folder / str(self.port)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.args = args
        self.sentinel = sentinel
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 15.0) -> RedisNode:
        cmd = [_exe("redis-server")]
        if self.sentinel:
            conf = self.dir / "sentinel.conf"  # Sentinel rewrites its config file: one per node
            conf.write_text("\n".join(self.args) + "\n")
            cmd += [str(conf), "--sentinel"]
            extra: list[str] = []
        else:
            extra = self.args
        cmd += ["--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.dir),
                "--logfile", str(self.dir / "redis.log"), *(_NODE_ARGS if not self.sentinel else []), *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self._pong, timeout, f"redis on port {self.port}")
        return self

    def _pong(self) -> bool:
        if not self.alive:
            raise RuntimeError(f"redis-server on port {self.port} exited: {self.log_tail()}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                reply = s.recv(64)
                return reply.startswith(b"+PONG") or reply.startswith(b"-NOAUTH")
        except OSError:
            return False

    def client(self, **kw: object) -> Redis:
        return Redis(host="127.0.0.1", port=self.port, password=self.password, socket_timeout=5, **kw)  # type: ignore[arg-type]

    def stop(self) -> None:
        """Kill (SIGKILL, like a crash) and reap."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def log_tail(self, n: int = 2000) -> str:
        try:
            return (self.dir / "redis.log").read_text()[-n:]
        except OSError:
            return ""


class RedisSingle:
    """One redis-server: the `redis://` URL two gateway processes share."""

    def __init__(self) -> None:
        self._tmp = tempfile.mkdtemp(prefix="gw-redis-")
        self.node = RedisNode(Path(self._tmp), [])

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.node.port}/0"

    @property
    def pids(self) -> list[int]:
        return [self.node.proc.pid] if self.node.proc else []

    def __enter__(self) -> RedisSingle:
        self.node.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.node.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)


class RedisClusterProcs:
    """`masters` primaries, each with `replicas` replicas, joined into one cluster."""

    def __init__(self, masters: int = 3, replicas: int = 0, node_timeout_ms: int = 1000) -> None:
        self._tmp = tempfile.mkdtemp(prefix="gw-cluster-")
        self.masters, self.replicas = masters, replicas
        args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(node_timeout_ms), "--cluster-require-full-coverage", "no",
                # a replica may take over even right after start (its link age is not held against it)
                "--cluster-replica-validity-factor", "0"]
        # The cluster bus port, by default port + 10000, is chosen free too (Redis refuses a port
        # above 55535 without one).
        self.nodes = [RedisNode(Path(self._tmp), [*args, "--cluster-port", str(free_port())])
                      for _ in range(masters * (1 + replicas))]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(n.name for n in self.nodes[: self.masters])

    @property
    def pids(self) -> list[int]:
        return [n.proc.pid for n in self.nodes if n.proc]

    def start(self) -> RedisClusterProcs:
        for node in self.nodes:
            node.start()
        subprocess.run([_exe("redis-cli"), "--cluster", "create", *(n.name for n in self.nodes),
                        "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        self.wait_healthy()
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> RedisClusterProcs:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- topology as the live nodes see it ----------------------------------------------------
    def node(self, name: str) -> RedisNode:
        return next(n for n in self.nodes if n.name == name)

    def slot_owners(self) -> dict[int, str]:
        """slot → primary `host:port`, from a live node's CLUSTER SLOTS (stale ones may disagree)."""
        for node in self.nodes:
            if not node.alive:
                continue
            try:
                with node.client() as r:
                    ranges = r.execute_command("CLUSTER SLOTS")
            except (OSError, RedisError):
                continue
            owners: dict[int, str] = {}
            for start, end, primary, *_ in ranges:
                host = primary[0].decode() if isinstance(primary[0], bytes) else primary[0]
                for slot in range(int(start), int(end) + 1):
                    owners[slot] = f"{host}:{primary[1]}"
            return owners
        raise RuntimeError("no live cluster node")

    def primary_of(self, key: str) -> RedisNode:
        return self.node(self.slot_owners()[key_slot(key.encode())])

    def replicas_of(self, primary: RedisNode) -> list[RedisNode]:
        out = []
        for node in self.nodes:
            if node.alive and node is not primary:
                with node.client() as r:
                    info = r.info("replication")
                if info.get("role") == "slave" and int(info.get("master_port", 0)) == primary.port:
                    out.append(node)
        return out

    def healthy(self) -> bool:
        """Every live node says `cluster_state:ok`, and every slot's owner is alive."""
        try:
            for node in self.nodes:
                if node.alive:
                    with node.client() as r:
                        if r.execute_command("CLUSTER INFO").get("cluster_state") != "ok":
                            return False
            owners = self.slot_owners()
        except (OSError, RuntimeError, RedisError):
            return False
        alive = {n.name for n in self.nodes if n.alive}
        return len(owners) == 16384 and set(owners.values()) <= alive

    def wait_healthy(self, timeout: float = 60.0) -> None:
        wait_until(self.healthy, timeout, "the cluster to be healthy", interval=0.1)


class RedisSentinelProcs:
    """A primary, a replica and `sentinels` Sentinels monitoring service `service` (quorum: a
    majority). With `password`, the primary and replica require it and the URL carries it."""

    def __init__(self, sentinels: int = 3, service: str = "gwmaster", password: str | None = None,
                 down_after_ms: int = 1000) -> None:
        self._tmp = tempfile.mkdtemp(prefix="gw-sentinel-")
        folder = Path(self._tmp)
        self.service, self.password = service, password
        auth = ["--requirepass", password, "--masterauth", password] if password else []
        self.primary = RedisNode(folder, auth, password=password)
        self.replica = RedisNode(folder, [*auth, "--replicaof", "127.0.0.1", str(self.primary.port)], password=password)
        quorum = sentinels // 2 + 1
        conf = [f"sentinel monitor {service} 127.0.0.1 {self.primary.port} {quorum}",
                f"sentinel down-after-milliseconds {service} {down_after_ms}",
                f"sentinel failover-timeout {service} {max(3000, 3 * down_after_ms)}",
                f"sentinel parallel-syncs {service} 1"]
        if password:
            conf.append(f"sentinel auth-pass {service} {password}")
        self.sentinels = [RedisNode(folder, conf, sentinel=True) for _ in range(sentinels)]

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis+sentinel://{auth}" + ",".join(s.name for s in self.sentinels) + f"/{self.service}/0"

    @property
    def pids(self) -> list[int]:
        return [n.proc.pid for n in (self.primary, self.replica, *self.sentinels) if n.proc]

    def start(self) -> RedisSentinelProcs:
        self.primary.start()
        self.replica.start()
        wait_until(self._replica_synced, 30, "the replica to sync")
        for s in self.sentinels:
            s.start()
        wait_until(lambda: self.current_primary() == self.primary.port, 30, "the Sentinels to agree")
        return self

    def _replica_synced(self) -> bool:
        with self.replica.client() as r:
            return r.info("replication").get("master_link_status") == "up"

    def current_primary(self) -> int | None:
        """The primary's port as the first live Sentinel reports it."""
        for s in self.sentinels:
            if s.alive:
                try:
                    with Redis(host="127.0.0.1", port=s.port, socket_timeout=2) as r:
                        addr = r.execute_command("SENTINEL GET-MASTER-ADDR-BY-NAME", self.service)
                except (OSError, RedisError):
                    continue
                if addr:
                    return int(addr[1])
        return None

    def stop(self) -> None:
        for node in (*self.sentinels, self.replica, self.primary):
            node.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> RedisSentinelProcs:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
