"""vLLM's Automatic Prefix Caching, as the V1 KV cache manager does it.

- Blocks of `block_size` (16) tokens; block hash = hash((parent hash, block token ids, extra keys)); the
  `cache_salt`, when given, is an extra key of the first block only. Only full blocks are cached.
- Hit = the longest run of cached block hashes from block 0, capped at `num_tokens - 1` tokens ("we must
  recompute the last token to obtain logits"), so at most floor((n-1)/B)*B tokens.
- Stats: queries += prompt tokens, hits += hit tokens, once per scheduling of a request (tokens, not blocks).
- Free blocks form an LRU queue; a finished request's blocks go to the tail in reverse order (its last block
  is evicted first); allocation pops the head and evicts its hash. Blocks in use are never evicted.
- Full blocks are cached at allocation (prompt) and when the request finishes (output).
Simplification: a request's blocks for prompt + output are allocated at admission (no preemption), so a
request waits in the queue until enough blocks are free.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

# A KV event as vLLM's kv_events.py defines it, before encoding: ("BlockStored", hashes, parent, token ids),
# ("BlockRemoved", hashes) or ("AllBlocksCleared",). `KVCacheManager.sink` receives them when set.
KVEvent = tuple[Any, ...]


class Block:
    __slots__ = ("hash", "id", "ref")

    def __init__(self, block_id: int) -> None:
        self.id = block_id
        self.ref = 0
        self.hash: int | None = None


class KVCacheManager:
    def __init__(self, num_blocks: int, block_size: int = 16) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError("num_blocks and block_size must be positive")
        self.num_blocks, self.block_size = num_blocks, block_size
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.free: OrderedDict[int, None] = OrderedDict((i, None) for i in range(num_blocks))
        self.cached: dict[int, Block] = {}
        self.queries = 0
        self.hits = 0
        self.evictions = 0
        self.sink: Callable[[KVEvent], None] | None = None  # KV events (kv_events.py), when publishing

    # -- hashing --------------------------------------------------------------------------------------
    def block_hashes(self, tokens: Sequence[int], salt: str | None = None, parent: int = 0,
                     start_block: int = 0) -> list[int]:
        """Chained hashes of the full blocks of `tokens` from `start_block` on."""
        b = self.block_size
        out = []
        h = parent
        for k in range(start_block, len(tokens) // b):
            extra = salt if (k == 0 and salt) else None
            h = hash((h, tuple(tokens[k * b:(k + 1) * b]), extra))
            out.append(h)
        return out

    # -- scheduling -----------------------------------------------------------------------------------
    def hit_blocks(self, hashes: list[int], num_tokens: int) -> int:
        cap = max(0, (num_tokens - 1) // self.block_size)
        n = 0
        for h in hashes[:cap]:
            if h not in self.cached:
                break
            n += 1
        return n

    def blocks_needed(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def can_allocate(self, hashes: list[int], hit: int, total_blocks: int) -> bool:
        # Hit blocks that sit in the free queue are taken out of it, not allocated anew.
        reusable_in_free = sum(1 for h in hashes[:hit] if self.cached[h].ref == 0)
        return len(self.free) - reusable_in_free >= total_blocks - hit

    def allocate(self, hashes: list[int], hit: int, total_blocks: int, num_prompt_tokens: int,
                 tokens: Sequence[int] | None = None) -> list[Block]:
        """Take the hit blocks, allocate the rest, record the stats. Caller checked `can_allocate`."""
        self.queries += num_prompt_tokens
        self.hits += hit * self.block_size
        blocks: list[Block] = []
        stored: list[int] = []
        for h in hashes[:hit]:
            blk = self.cached[h]
            if blk.ref == 0:
                del self.free[blk.id]
            blk.ref += 1
            blocks.append(blk)
        for i in range(hit, total_blocks):
            bid, _ = self.free.popitem(last=False)
            blk = self.blocks[bid]
            if blk.hash is not None:
                if self.cached.get(blk.hash) is blk:
                    del self.cached[blk.hash]
                    self._emit(("BlockRemoved", [blk.hash]))
                blk.hash = None
                self.evictions += 1
            blk.ref = 1
            if i < len(hashes) and hashes[i] not in self.cached:
                blk.hash = hashes[i]
                self.cached[blk.hash] = blk
                stored.append(i)
            blocks.append(blk)
        self._stored(hashes, stored, tokens)
        return blocks

    def _emit(self, event: KVEvent) -> None:
        if self.sink is not None:
            self.sink(event)

    def _stored(self, hashes: list[int], positions: list[int], tokens: Sequence[int] | None) -> None:
        """BlockStored events for the newly cached blocks at `positions` (runs of consecutive blocks share one
        event, as vLLM emits one per request and step)."""
        if self.sink is None or not positions or tokens is None:
            return
        b = self.block_size
        run: list[int] = []
        for pos in [*positions, -2]:
            if run and pos != run[-1] + 1:
                first = run[0]
                self.sink(("BlockStored", [hashes[k] for k in run], hashes[first - 1] if first else None,
                           list(tokens[first * b:(run[-1] + 1) * b]), b))
                run = []
            if pos >= 0:
                run.append(pos)

    def cache_full_blocks(self, blocks: list[Block], hashes: list[int], parent: int | None = None,
                          tokens: Sequence[int] | None = None) -> None:
        """Register hashes for blocks that became full (the output part) when the request finished.
        `tokens` are those blocks' tokens (for the BlockStored event), `parent` the hash before them."""
        stored = []
        for k, (blk, h) in enumerate(zip(blocks, hashes, strict=False)):
            if blk.hash is None and h not in self.cached:
                blk.hash = h
                self.cached[h] = blk
                stored.append(k)
        if self.sink is not None and stored and tokens is not None:
            b = self.block_size
            for k in stored:  # one event per block: its parent is the block before it
                self.sink(("BlockStored", [hashes[k]], hashes[k - 1] if k else parent,
                           list(tokens[k * b:(k + 1) * b]), b))

    def release(self, blocks: list[Block]) -> None:
        for blk in reversed(blocks):
            blk.ref -= 1
            if blk.ref == 0:
                self.free[blk.id] = None

    # -- state ----------------------------------------------------------------------------------------
    @property
    def usage(self) -> float:
        """vLLM's `kv_cache_usage_perc`: 1 - free/total (cached but unreferenced blocks count as free)."""
        return 1.0 - len(self.free) / self.num_blocks

    def reset(self) -> None:
        sink = self.sink
        self.__init__(self.num_blocks, self.block_size)  # type: ignore[misc]
        self.sink = sink
