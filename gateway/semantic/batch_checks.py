"""The decision's blocking checks, batched across concurrent lookups in one worker thread.

Under load most of a lookup's CPU went to the English parse of the new question (spaCy) and its
MiniLM vector (the reworded lane's second opinion), each run alone in the default executor, with a
thread hop apiece. Both models are cheaper a question in a batch (spaCy's `pipe` about 2.5×, MiniLM
about 1.7× on these CPUs) and give bit-identical results batched (`tests/semantic/test_batch_checks.py`
checks it on the labelled questions), so a decision cannot change.

`CheckBatcher.run` queues a check (`structure.roles_agree`, `structure.agree`, `paraphrase.confident`)
with the texts it will read: checks that arrive within `window_ms` go to the worker thread as one
batch, which first parses (or encodes) every text of the batch not yet seen in one call each, into
the caches those functions already read (`structure.prime`, which also fills the placement rule's,
and `paraphrase.prime`), then runs the checks
one after the other. Only what a check needs is prepared: a parse for the role and structure checks;
for the second opinion only the vectors, since its parse is needed only when MiniLM's score already
reached the bar (the check parses then, alone). One thread: the models never run twice at once, and
the event loop gets one wake-up a batch instead of one a check.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gateway.semantic import paraphrase, placement, structure
from gateway.semantic.batching import collect


@dataclass(slots=True)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    parse: Sequence[str]  # English texts the check will parse
    vectors: Sequence[str]  # English texts it will encode with MiniLM
    future: asyncio.Future[Any] = field(repr=False)
    # English texts it will parse, known only once the vectors are there (the second opinion parses
    # only when MiniLM's score reached the bar): parsed in a second batch before the checks run
    then_parse: Callable[[], Sequence[str]] | None = None


class _Seen:
    """Texts already prepared (bounded like the caches it stands for): not prepared again. A text
    the cache has since dropped is simply computed alone by the check: the same result."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._keys: OrderedDict[str, None] = OrderedDict()

    def new(self, texts: Sequence[str]) -> list[str]:
        out = [t for t in dict.fromkeys(texts) if t not in self._keys]
        for t in out:
            self._keys[t] = None
        while len(self._keys) > self.size:
            self._keys.popitem(last=False)
        return out


def _named(then: Callable[[], Sequence[str]]) -> Sequence[str]:
    """What a job will parse; a failure here is left for the job itself to meet (and fail alone)."""
    try:
        return then()
    except Exception:
        return ()


def _places_en(text: str) -> object:
    return placement.places(text, "en")


class CheckBatcher:
    def __init__(self, window_ms: float = 1.0, max_batch: int = 32, seen_size: int = 8192) -> None:
        self.window = window_ms / 1000.0
        self.max_batch = max_batch
        self._parsed = _Seen(seen_size)
        self._encoded = _Seen(seen_size)
        self._queue: asyncio.Queue[_Job] | None = None
        self._task: asyncio.Task[None] | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="semantic-checks")
        self.batches = 0  # counters for the benchmark and tests
        self.jobs = 0

    async def run(self, fn: Callable[..., Any], *args: Any, parse: Sequence[str] = (),
                  vectors: Sequence[str] = (), then_parse: Callable[[], Sequence[str]] | None = None) -> Any:
        """`fn(*args)` in the worker thread, after `parse` and `vectors` are prepared in a batch (and
        then what `then_parse()` names, in a second one)."""
        if self._task is None or self._task.done() or self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.create_task(self._loop(), name="semantic-checks")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Job(fn, args, parse, vectors, future, then_parse))
        return await future

    async def _loop(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            batch = await collect(self._queue, self.window, self.max_batch)
            live = [j for j in batch if not j.future.done()]  # a caller past its deadline is gone
            if not live:
                continue
            try:
                results = await loop.run_in_executor(self._pool, self._work, live)
            except Exception as exc:  # preparing failed: every check of the batch fails (a plain miss)
                results = [(False, exc)] * len(live)
            self.batches += 1
            self.jobs += len(live)
            for job, (ok, value) in zip(live, results, strict=True):
                if job.future.done():
                    continue
                if ok:
                    job.future.set_result(value)
                else:
                    job.future.set_exception(value)

    def _work(self, batch: list[_Job]) -> list[tuple[bool, Any]]:
        parse = self._parsed.new([t for j in batch for t in j.parse])
        if parse:
            structure.prime(parse, readers=(_places_en,))
        vectors = self._encoded.new([t for j in batch for t in j.vectors])
        if vectors:
            paraphrase.prime(vectors)
        later = [j.then_parse for j in batch if j.then_parse is not None]
        if later:
            parse = self._parsed.new([t for then in later for t in _named(then)])
            if parse:
                structure.prime(parse, readers=(_places_en,))
        out: list[tuple[bool, Any]] = []
        for job in batch:
            try:
                out.append((True, job.fn(*job.args)))
            except Exception as exc:
                out.append((False, exc))
        return out

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self._pool.shutdown(wait=False)
