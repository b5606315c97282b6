"""An approximate, per-replica index of the prompt prefixes each vLLM replica probably holds in its KV cache.

vLLM caches a prompt as chained hashes of full 16-token blocks. The gateway
does not tokenize (the replica's tokenizer and chat template are not known here), so it mirrors that
structure over the *rendered request bytes*: the body is serialized deterministically, cut into
`chunk_bytes`-byte chunks (64 bytes ≈ 16 tokens at ~4 bytes a token, llm-d's approximation), and each
chunk's key is a hash of the previous key and the chunk, seeded with the model name. A request that
extends an earlier one (the next turn of a conversation, another question after the same system prompt)
therefore shares its leading keys with it.

Each replica's index is an LRU of chunk keys bounded to mirror that replica's KV capacity (learned from
`vllm:cache_config_info`, or set). Keys are inserted in *reverse* order, as vLLM frees a finished
request's blocks (last block first): the tail of a prompt is evicted before its head, so a
prefix survives longest, as it does on the replica.

The hashes are deterministic across processes (blake2b, not Python's salted `hash`), so every gateway
replica computes the same keys for the same request.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import orjson

_DUMP = orjson.OPT_SORT_KEYS


def render(body: dict[str, Any]) -> bytes:
    """The request as the bytes the replica's prompt is made of, in prompt order.

    Tools first (chat templates put them in the system prompt), then each message (or the completion
    prompt / Responses input). Each part is serialized on its own with sorted keys, so the rendering
    of a conversation is a byte prefix of the rendering of its next turn.
    """
    parts: list[bytes] = []
    tools = body.get("tools")
    if tools:
        parts.append(orjson.dumps(tools, option=_DUMP))
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        parts.append(instructions.encode())
    messages = body.get("messages")
    if isinstance(messages, list):
        parts.extend(_dump(m) for m in messages)
    elif "prompt" in body:
        prompt = body["prompt"]
        parts.append(prompt.encode() if isinstance(prompt, str) else _dump(prompt))
    elif "input" in body:
        items = body["input"]
        if isinstance(items, list):
            parts.extend(_dump(item) for item in items)
        else:
            parts.append(items.encode() if isinstance(items, str) else _dump(items))
    return b"\n".join(parts)


def _dump(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=_DUMP)
    except TypeError:  # not JSON-serializable: still deterministic, never fatal
        return repr(value).encode()


def chunk_keys(data: bytes, model: str = "", chunk_bytes: int = 64, max_chunks: int = 4096) -> list[bytes]:
    """Chained keys of the full chunks of `data` (a trailing partial chunk is not cached by vLLM either)."""
    prev = hashlib.blake2b(model.encode(), digest_size=8).digest()
    n = min(len(data) // chunk_bytes, max_chunks)
    keys: list[bytes] = []
    append = keys.append
    blake = hashlib.blake2b
    view = memoryview(data)
    for i in range(n):
        h = blake(prev, digest_size=8)
        h.update(view[i * chunk_bytes:(i + 1) * chunk_bytes])
        prev = h.digest()
        append(prev)
    return keys


class PrefixIndex:
    """Per-replica LRU sets of chunk keys; `match` counts the leading keys each replica holds."""

    def __init__(self, default_capacity: int = 31_250) -> None:
        self.default_capacity = default_capacity
        self._lru: dict[str, OrderedDict[bytes, None]] = {}
        self._capacity: dict[str, int] = {}

    def capacity(self, replica: str) -> int:
        return self._capacity.get(replica, self.default_capacity)

    def set_capacity(self, replica: str, chunks: int) -> None:
        self._capacity[replica] = max(1, int(chunks))
        self._evict(replica)

    def size(self, replica: str) -> int:
        lru = self._lru.get(replica)
        return len(lru) if lru is not None else 0

    def occupancy(self, replica: str) -> float:
        """Fraction of the mirrored KV capacity the index believes is filled."""
        return self.size(replica) / self.capacity(replica)

    def match(self, keys: list[bytes], replicas: Iterable[str]) -> dict[str, int]:
        """Number of leading keys of `keys` each replica holds (0 for unknown replicas)."""
        out: dict[str, int] = {}
        for name in replicas:
            lru = self._lru.get(name)
            n = 0
            if lru:
                for key in keys:
                    if key not in lru:
                        break
                    n += 1
            out[name] = n
        return out

    def insert(self, replica: str, keys: list[bytes]) -> None:
        """Record that `replica` now holds `keys` (most recently used), evicting the LRU tail over capacity."""
        if not keys:
            return
        lru = self._lru.get(replica)
        if lru is None:
            lru = self._lru[replica] = OrderedDict()
        move = lru.move_to_end
        for key in reversed(keys):  # the head ends most recent: evicted last, as on the replica
            if key in lru:
                move(key)
            else:
                lru[key] = None
        self._evict(replica)

    def drop(self, replica: str) -> None:
        """Forget everything about `replica` (it restarted, failed, or left the pool)."""
        self._lru.pop(replica, None)

    def _evict(self, replica: str) -> None:
        lru = self._lru.get(replica)
        if lru is None:
            return
        cap = self.capacity(replica)
        while len(lru) > cap:
            lru.popitem(last=False)
