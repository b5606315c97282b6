"""Micro-batching shared by the embedder and the reworded lane's checks.

Both run a model in one worker thread, where one call on N questions costs far less than N calls;
concurrent lookups therefore queue their work and one task takes what arrived within a short window.
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

T = TypeVar("T")


async def collect(queue: asyncio.Queue[T], window: float, max_batch: int) -> list[T]:
    """The next item and whatever else arrives within `window` seconds of it, at most `max_batch`."""
    loop = asyncio.get_running_loop()
    batch = [await queue.get()]
    deadline = loop.time() + window
    while len(batch) < max_batch:
        try:
            batch.append(queue.get_nowait())
            continue
        except asyncio.QueueEmpty:
            pass
        left = deadline - loop.time()
        if left <= 0:
            break
        try:
            batch.append(await asyncio.wait_for(queue.get(), left))
        except TimeoutError:
            break
    return batch
