"""BreakStore: a conversation's previous request found again, in one round trip when its record is small."""

from __future__ import annotations

from typing import Any

from gateway.provider_cache.breaks import INLINE_MAX, BreakStore, to_previous
from gateway.provider_cache.prefix import render
from gateway.rewrite.detect import detector_for
from gateway.stores.memory import MemoryStore

DETECTOR = detector_for(())


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0  # calls (round trips on a shared store), not keys
        self._inside = False

    async def get(self, key: str) -> bytes | None:
        self.reads += not self._inside
        return await super().get(key)

    async def get_many(self, keys: Any) -> list[bytes | None]:
        self.reads += 1
        self._inside = True
        try:
            return await super().get_many(keys)
        finally:
            self._inside = False


def _body(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for t in range(turns):
        messages += [{"role": "user", "content": f"question {t}"}, {"role": "assistant", "content": f"answer {t}"}]
    return {"model": "gpt-4o", "messages": [*messages, {"role": "user", "content": "What is a retry budget?"}]}


async def _round_trip(turns: int) -> tuple[int, int, str | None]:
    store = CountingStore()
    breaks = BreakStore(store, ttl_s=60)
    first = _body(turns)
    blocks = render("openai_chat", "gpt-4o", first)
    prev = to_previous("gw-first", blocks, 100, DETECTOR, None, None)
    await breaks.save("t", None, None, blocks, prev)
    nxt = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "ok"},
                                 {"role": "user", "content": "and then?"}]}
    found = await breaks.find("t", None, None, render("openai_chat", "gpt-4o", nxt))
    return store.reads, len(prev.dumps()), found.request_id if found is not None else None


async def test_a_small_record_is_found_in_one_read() -> None:
    reads, size, found = await _round_trip(0)
    assert size <= INLINE_MAX
    assert (reads, found) == (1, "gw-first")


async def test_a_large_record_is_pointed_at_and_read_second() -> None:
    reads, size, found = await _round_trip(40)  # a hash and an end per message
    assert size > INLINE_MAX
    assert (reads, found) == (2, "gw-first")
