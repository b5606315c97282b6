"""vLLM's prefix-cache bookkeeping, unit level."""

from __future__ import annotations

from gateway_dev.emulators.vllm_kv import KVCacheManager


def _run(kv: KVCacheManager, tokens: list[int], output: int = 0) -> int:
    """Schedule, allocate and finish one request; returns its hit tokens."""
    hashes = kv.block_hashes(tokens)
    hit = kv.hit_blocks(hashes, len(tokens))
    total = kv.blocks_needed(len(tokens) + output)
    assert kv.can_allocate(hashes, hit, total)
    blocks = kv.allocate(hashes, hit, total, len(tokens))
    kv.release(blocks)
    return hit * kv.block_size


def test_chained_hashes_only_full_blocks_and_the_n_minus_1_cap() -> None:
    kv = KVCacheManager(num_blocks=100, block_size=16)
    a = list(range(40))  # 2 full blocks + 8 tokens
    assert len(kv.block_hashes(a)) == 2
    assert _run(kv, a) == 0
    assert _run(kv, a) == 32  # both full blocks; the partial one is never cached
    b = list(range(48))  # exactly 3 blocks: the cap (n-1 = 47 tokens) leaves the 3rd block out
    assert _run(kv, b) == 32
    assert _run(kv, b) == 32
    # chaining: the same second block after a different first block is not a hit
    c = [999, *list(range(1, 40))]
    assert _run(kv, c) == 0
    assert kv.queries == 40 * 2 + 48 * 2 + 40 and kv.hits == 32 * 3


def test_cache_salt_changes_only_the_first_block_key() -> None:
    kv = KVCacheManager(num_blocks=100)
    tokens = list(range(64))
    assert kv.block_hashes(tokens, salt="a")[0] != kv.block_hashes(tokens, salt="b")[0]
    assert kv.block_hashes(tokens, salt="a")[1:] != kv.block_hashes(tokens)[1:]  # chained from a different root


def test_lru_eviction_takes_the_tail_of_the_oldest_request_first() -> None:
    kv = KVCacheManager(num_blocks=8, block_size=16)
    a = list(range(64))  # 4 blocks
    b = list(range(1000, 1064))  # 4 blocks
    _run(kv, a)
    _run(kv, b)
    assert kv.usage == 0.0 and len(kv.cached) == 8  # finished: cached but free
    c = list(range(2000, 2032))  # 2 blocks: evicts a's last two blocks (freed in reverse order)
    _run(kv, c)
    assert kv.evictions == 2
    assert _run(kv, b) == 48  # b untouched: 3 blocks hit (the n-1 cap drops the 4th, recomputed anew)
    # b's recomputed 4th block took the LRU head, a's 2nd block: only a's first block is left
    assert _run(kv, a) == 16


def test_blocks_in_use_are_never_evicted_and_usage_counts_them() -> None:
    kv = KVCacheManager(num_blocks=4, block_size=16)
    a = list(range(64))
    hashes = kv.block_hashes(a)
    blocks = kv.allocate(hashes, 0, 4, 64)
    assert kv.usage == 1.0
    other = list(range(100, 116))
    assert not kv.can_allocate(kv.block_hashes(other), 0, 1)
    kv.release(blocks)
    assert kv.usage == 0.0 and kv.can_allocate(kv.block_hashes(other), 0, 1)
    # a hit block waiting in the free queue is reused, not counted twice against the free space
    h = kv.block_hashes(a)
    hit = kv.hit_blocks(h, 64)
    assert hit == 3 and kv.can_allocate(h, hit, 4)
