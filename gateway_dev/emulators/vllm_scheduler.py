"""A vLLM replica's scheduler (vllm_app.py): admission under `max_num_seqs` and the KV capacity, a FIFO
waiting queue, the release that caches a finished request's full blocks, and the shared prefill lane."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.vllm_kv import Block

if TYPE_CHECKING:
    from gateway_dev.emulators.vllm_app import VLLMConfig


class Seq:
    """A request from admission to release."""

    __slots__ = ("blocks", "event", "hashes", "hit_tokens", "prompt", "total_blocks")

    def __init__(self, prompt: list[int], hashes: list[int], total_blocks: int) -> None:
        self.prompt, self.hashes, self.total_blocks = prompt, hashes, total_blocks
        self.blocks: list[Block] = []
        self.hit_tokens = 0
        self.event: asyncio.Event | None = None


class Scheduler:
    """The scheduling half of `VLLMReplica` (which sets these attributes up)."""

    config: VLLMConfig
    kv: Any  # vllm_kv.KVCacheManager (sglang_radix.RadixCache in the SGLang flavour)
    events: Any  # kv_events.KVEventPublisher, or None
    running: int
    waiting: deque[Seq]
    _lane: float  # when the shared prefill lane is next free (monotonic seconds)

    async def _prefill_wait(self, latency: Any, uncached: int, cached: int) -> None:
        if not self.config.shared_prefill:
            await pause(latency.ttft(uncached, cached))
            return
        now = time.monotonic()
        start = max(now, self._lane)
        self._lane = start + uncached * latency.prefill_per_token_s
        await pause(self._lane - now + latency.ttft(0, cached))

    def _try_admit(self, seq: Seq) -> bool:
        if self.running >= self.config.max_num_seqs:
            return False
        hit = self.kv.hit_blocks(seq.hashes, len(seq.prompt))
        if not self.kv.can_allocate(seq.hashes, hit, seq.total_blocks):
            return False
        seq.blocks = self.kv.allocate(seq.hashes, hit, seq.total_blocks, len(seq.prompt), seq.prompt)
        seq.hit_tokens = hit * self.config.block_size
        self.running += 1
        if self.events is not None:
            self.events.flush()
        return True

    async def admit(self, seq: Seq) -> None:
        if not self.waiting and self._try_admit(seq):
            return
        seq.event = asyncio.Event()
        self.waiting.append(seq)
        try:
            await seq.event.wait()
        except BaseException:
            if seq in self.waiting:
                self.waiting.remove(seq)
            elif seq.blocks:  # admitted just as we were cancelled
                self.release(seq, [])
            raise

    def release(self, seq: Seq, output_tokens: list[int]) -> None:
        if output_tokens:
            full = seq.prompt + output_tokens
            start = len(seq.prompt) // self.config.block_size
            parent = seq.hashes[start - 1] if start else 0
            hashes = self.kv.block_hashes(full, parent=parent, start_block=start)
            self.kv.cache_full_blocks(seq.blocks[start:], hashes, parent or None,
                                      full[start * self.config.block_size:])
        self.kv.release(seq.blocks)
        if self.events is not None:
            self.events.flush()
        seq.blocks = []
        self.running -= 1
        self._admit_waiting()

    def _admit_waiting(self) -> None:
        """A sequence ended: admit from the head of the FIFO queue while there is room (both engines' loop;
        each flavour's `_try_admit` says what room means there)."""
        while self.waiting and self._try_admit(self.waiting[0]):
            head = self.waiting.popleft()
            assert head.event is not None
            head.event.set()
