"""Precise mode of `cache_aware`: the blocks each replica really holds, from vLLM's KV events.

vLLM started with `--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint":
"tcp://*:5557"}'` publishes on a ZMQ PUB socket. Each message is three frames: topic, an 8-byte big-endian
sequence number, and a msgpack `KVEventBatch` — {"ts", "events", "data_parallel_rank"} with tagged events
{"type": "BlockStored", "block_hashes", "parent_block_hash", "token_ids", "block_size", ...},
{"type": "BlockRemoved", "block_hashes", ...}, {"type": "AllBlocksCleared"}; older releases encode the same
structs as arrays ([ts, events], ["BlockStored", hashes, parent, tokens, block_size, ...]). Both are read.

The engine's block hashes depend on its hash function and seed, which the gateway does not share, so each
stored block is re-keyed here from what the event carries: key = blake2b(parent's key ‖ the block's token ids),
the parent found through the engine's hash. A request is tokenized by a replica (`POST /tokenize` with the
same body: the model's own chat template) and keyed the same way; its match on a replica is the run of its
leading blocks that replica holds.

Staleness: a replica is scored from events only while its stream is live — it has sent a batch, and no
request placed there has gone more than `kv_events_stale_s` without a batch following (a request always
stores or touches blocks, so silence means the stream stopped). A sequence number that goes back is a
restarted engine (its blocks are forgotten, the stream is trusted again); a gap means lost batches (the
replica is scored by the prediction until its cache starts over: a restart or AllBlocksCleared; vLLM's
ROUTER replay socket, which could fill the gap, is not used). Otherwise the replica falls back to the
prediction (prefix_index.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("gateway.routing")


def block_key(parent: bytes, tokens: Sequence[int]) -> bytes:
    data = b"".join(int(t).to_bytes(5, "big", signed=True) for t in tokens)
    return hashlib.blake2b(parent + data, digest_size=16).digest()


def _events(batch: Any) -> list[tuple[str, dict[str, Any]]]:
    """The events of a decoded batch, map form or array form, as (type, fields)."""
    raw = batch.get("events") if isinstance(batch, dict) else batch[1] if isinstance(batch, list) else None
    out = []
    for ev in raw or []:
        if isinstance(ev, dict):
            out.append((str(ev.get("type")), ev))
        elif isinstance(ev, list) and ev:
            kind = str(ev[0])
            if kind == "BlockStored" and len(ev) >= 5:
                out.append((kind, {"block_hashes": ev[1], "parent_block_hash": ev[2], "token_ids": ev[3],
                                   "block_size": ev[4]}))
            elif kind == "BlockRemoved" and len(ev) >= 2:
                out.append((kind, {"block_hashes": ev[1]}))
            else:
                out.append((kind, {}))
    return out


class _Held:
    __slots__ = ("block_size", "by_hash", "keys", "last_event", "lost", "pending_since", "seq")

    def __init__(self) -> None:
        self.by_hash: dict[Any, bytes] = {}  # engine block hash -> our key
        self.keys: set[bytes] = set()
        self.block_size = 16
        self.seq: int | None = None
        self.last_event: float | None = None
        self.pending_since: float | None = None
        self.lost = False  # batches were lost: blocks stored then are unknown until the cache starts over


def _hashable(h: Any) -> Any:
    return bytes(h) if isinstance(h, bytearray | memoryview) else h


class KVEventIndex:
    def __init__(self, stale_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.stale_s = stale_s
        self._clock = clock
        self.replicas: dict[str, _Held] = {}

    def apply(self, replica: str, seq: int, batch: Any) -> None:
        held = self.replicas.setdefault(replica, _Held())
        if held.seq is None and seq > 0:
            # Joined a stream already under way: the blocks stored before are unknown (vLLM's replay socket
            # could fill them in; not used), so the prediction scores this replica until its cache starts over.
            held.lost = True
        elif held.seq is not None and seq != held.seq + 1:
            # back: a restarted engine (empty cache, known again); forward: batches were lost, so blocks
            # stored meanwhile are unknown — the prediction scores this replica until its cache starts over.
            log.info("KV event stream reset", extra={"replica": replica, "from": held.seq, "to": seq})
            held.by_hash.clear()
            held.keys.clear()
            held.lost = seq > held.seq
        held.seq = seq
        held.last_event = self._clock()
        held.pending_since = None
        for kind, ev in _events(batch):
            if kind == "BlockStored":
                parent = held.by_hash.get(_hashable(ev.get("parent_block_hash")), b"")
                size = int(ev.get("block_size") or held.block_size)
                held.block_size = size
                tokens = list(ev.get("token_ids") or [])
                for i, h in enumerate(ev.get("block_hashes") or []):
                    key = block_key(parent, tokens[i * size:(i + 1) * size])
                    held.by_hash[_hashable(h)] = key
                    held.keys.add(key)
                    parent = key
            elif kind == "BlockRemoved":
                for h in ev.get("block_hashes") or []:
                    gone = held.by_hash.pop(_hashable(h), b"")
                    if gone:
                        held.keys.discard(gone)
            elif kind == "AllBlocksCleared":
                held.by_hash.clear()
                held.keys.clear()
                held.lost = False

    def placed(self, replica: str) -> None:
        held = self.replicas.get(replica)
        if held is not None and held.pending_since is None:
            held.pending_since = self._clock()

    def fresh(self, replica: str) -> bool:
        held = self.replicas.get(replica)
        if held is None or held.last_event is None or held.lost:
            return False
        return held.pending_since is None or self._clock() - held.pending_since <= self.stale_s

    def forget(self, replica: str) -> None:
        self.replicas.pop(replica, None)

    def shares(self, tokens: Sequence[int], replicas: Sequence[str]) -> dict[str, float]:
        """Matched share of `tokens` on each replica whose stream is fresh (others are left out)."""
        out: dict[str, float] = {}
        if not tokens:
            return out
        keys_by_size: dict[int, list[bytes]] = {}
        for name in replicas:
            if not self.fresh(name):
                continue
            held = self.replicas[name]
            size = held.block_size
            keys = keys_by_size.get(size)
            if keys is None:
                keys, parent = [], b""
                for k in range(len(tokens) // size):
                    parent = block_key(parent, tokens[k * size:(k + 1) * size])
                    keys.append(parent)
                keys_by_size[size] = keys
            n = 0
            for key in keys:
                if key not in held.keys:
                    break
                n += 1
            out[name] = n * size / len(tokens)
        return out


class KVEventSubscriber:
    """One SUB socket per replica with an events endpoint, feeding a `KVEventIndex` (pyzmq's asyncio API)."""

    def __init__(self, index: KVEventIndex, endpoints: Callable[[], dict[str, str]]) -> None:
        self.index = index
        self._endpoints = endpoints
        self._tasks: dict[str, tuple[str, asyncio.Task[None]]] = {}
        self._sync: asyncio.Task[None] | None = None
        self._ctx: Any = None

    async def start(self) -> None:
        import zmq.asyncio

        self._ctx = zmq.asyncio.Context.instance()
        self.sync()
        self._sync = asyncio.create_task(self._resync(), name="kv-events-sync")

    def sync(self) -> None:
        """Subscribe to new endpoints, drop those of replicas that left."""
        wanted = self._endpoints()
        for name, (endpoint, task) in list(self._tasks.items()):
            if wanted.get(name) != endpoint:
                task.cancel()
                del self._tasks[name]
                self.index.forget(name)
        for name, endpoint in wanted.items():
            if name not in self._tasks:
                self._tasks[name] = (endpoint, asyncio.create_task(self._listen(name, endpoint),
                                                                   name=f"kv-events-{name}"))

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.sync()

    async def _listen(self, name: str, endpoint: str) -> None:
        import ormsgpack
        import zmq

        sock = self._ctx.socket(zmq.SUB)
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.connect(endpoint)
        try:
            while True:
                frames = await sock.recv_multipart()
                if len(frames) != 3:
                    continue
                try:
                    batch = ormsgpack.unpackb(frames[2])
                except ormsgpack.MsgpackDecodeError:
                    continue
                self.index.apply(name, int.from_bytes(frames[1], "big", signed=True), batch)
        finally:
            sock.close(linger=0)

    async def stop(self) -> None:
        tasks = [t for _, t in self._tasks.values()] + ([self._sync] if self._sync else [])
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self._sync = None
