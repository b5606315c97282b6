"""vLLM's KV-cache events, published the way vLLM's `ZmqEventPublisher` does (`--kv-events-config
'{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557"}'`).

Wire format (vllm/distributed/kv_events.py): a ZMQ PUB socket; each message has three frames — the topic
(bytes, default empty), the sequence number (8-byte big-endian, from 0, +1 per batch) and the payload, a
msgpack-encoded `KVEventBatch` {"ts": float, "events": [...], "data_parallel_rank": int}. Events are tagged
structs ("type" is the class name): `BlockStored` {block_hashes, parent_block_hash, token_ids, block_size,
lora_id, medium, lora_name}, `BlockRemoved` {block_hashes, medium}, `AllBlocksCleared` {}. (Releases before
the structs were made maps encoded them as arrays: [ts, events], events ["BlockStored", hashes, ...]; the
gateway's subscriber reads both.) A restarted vLLM starts its sequence at 0 again, with an empty cache.

Simplification: no ROUTER replay socket (the subscriber treats a gap as lost state, see gateway/routing).
"""

from __future__ import annotations

import time
from typing import Any

from gateway_dev.emulators.vllm_kv import KVEvent

_U64 = (1 << 64) - 1


def _wire(h: int | None) -> int | None:
    """vLLM's block hashes are bytes or unsigned integers on the wire; the emulator's are Python hashes."""
    return None if h is None else h & _U64


def encode_event(event: KVEvent) -> dict[str, Any]:
    kind = event[0]
    if kind == "BlockStored":
        _, hashes, parent, tokens, block_size = event
        return {"type": "BlockStored", "block_hashes": [_wire(h) for h in hashes],
                "parent_block_hash": _wire(parent), "token_ids": tokens, "block_size": block_size,
                "lora_id": None, "medium": "GPU", "lora_name": None}
    if kind == "BlockRemoved":
        return {"type": "BlockRemoved", "block_hashes": [_wire(h) for h in event[1]], "medium": "GPU"}
    return {"type": "AllBlocksCleared"}


class KVEventPublisher:
    """One replica's PUB socket. `publish` is called on the emulator's event loop; a PUB socket never
    blocks (at its high-water mark it drops, as vLLM's does)."""

    def __init__(self, endpoint: str = "tcp://127.0.0.1:*", topic: str = "") -> None:
        import ormsgpack
        import zmq

        self._pack = ormsgpack.packb
        self._zmq = zmq
        self._ctx = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.PUB)
        self._sock.set_hwm(100_000)
        self._sock.bind(endpoint)
        self.endpoint = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._topic = topic.encode()
        self.seq = 0
        self.paused = False  # the stream stops (a test's fault): batches are lost, not queued
        self._pending: list[dict[str, Any]] = []

    def add(self, event: KVEvent) -> None:
        self._pending.append(encode_event(event))

    def flush(self) -> None:
        """Send what one scheduling step produced as one batch."""
        if not self._pending:
            return
        events, self._pending = self._pending, []
        if self.paused:  # lost on the way: the sequence still moves, as for batches dropped past the HWM
            self.seq += 1
            return
        payload = self._pack({"ts": time.time(), "events": events, "data_parallel_rank": 0})
        try:
            self._sock.send_multipart((self._topic, self.seq.to_bytes(8, "big"), payload),
                                      flags=self._zmq.NOBLOCK)
        except self._zmq.Again:
            pass
        self.seq += 1

    def restart(self) -> None:
        """A restarted engine: a new sequence from 0, nothing pending."""
        self.seq = 0
        self._pending = []

    def close(self) -> None:
        self._sock.close(linger=0)
