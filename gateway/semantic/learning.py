"""The semantic layer's learning loop: which hits were served, what was verified, what was learned.

- `Learner.gate` decides a reworded would-be hit from the evidence bound (`EvidenceBook.assess`).
- `Learner.sample` draws the would-be hits that go upstream anyway (`verify_share`).
- `Learner.verified` takes the fresh upstream answer of such a request (or of a reworded miss,
  which went upstream anyway) and records an observation: answers that agree are evidence of a
  right hit; otherwise the tenant's judge model, in a background task, or nothing.
- `Learner.served_hit` remembers which entry answered a request id, so that
  `POST /admin/cache/feedback {request_id, correct}` (`Learner.feedback`) can record the outcome;
  a wrong hit also drops the entry from the store.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway.semantic.evidence import Assessment, EvidenceBook
from gateway.semantic.judge import Judge, answers_agree

log = logging.getLogger("gateway.semantic")

MAX_SERVED = 100_000  # request ids remembered for feedback (an LRU: memory stays bounded)


@dataclass(frozen=True, slots=True)
class Pending:
    """A would-be hit that went upstream instead: compared with the fresh answer in `after()`."""

    tenant: str
    lang: str
    lane: str
    entry_id: str
    similarity: float
    cached_question: str
    cached_text: str
    question: str


@dataclass(frozen=True, slots=True)
class Served:
    tenant: str
    lang: str
    lane: str
    entry_id: str
    similarity: float


class Learner:
    def __init__(self, evidence: EvidenceBook | None = None, judge: Judge | None = None,
                 rng: random.Random | None = None) -> None:
        self.evidence = evidence or EvidenceBook()
        self.judge = judge
        self.rng = rng or random.Random()
        self._served: OrderedDict[str, Served] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()

    def gate(self, tenant: str, lang: str, lane: str, entry_id: str, similarity: float,
             max_error_rate: float) -> Assessment:
        return self.evidence.assess(tenant, lang, lane, entry_id, similarity, max_error_rate)

    def sample(self, share: float) -> bool:
        return share > 0.0 and self.rng.random() < share

    def served_hit(self, request_id: str, served: Served) -> None:
        self._served[request_id] = served
        self._served.move_to_end(request_id)
        while len(self._served) > MAX_SERVED:
            self._served.popitem(last=False)

    def verified(self, pending: Pending, fresh_text: str, judge_model: str | None) -> bool | None:
        """Record what the fresh answer says about the would-be hit; returns the immediate verdict."""
        agreed = answers_agree(fresh_text, pending.cached_text)
        if agreed is not None:
            self._record(pending, agreed)
            return agreed
        if self.judge is not None and judge_model:
            self._spawn(self._judge(pending, fresh_text, judge_model))
        return None

    async def _judge(self, pending: Pending, fresh_text: str, model: str) -> None:
        if self.judge is None:
            return
        try:
            verdict = await self.judge.judge(model, pending.question, pending.cached_question,
                                             pending.cached_text, fresh_text)
        except Exception as exc:  # a judge that fails teaches nothing; the request is long answered
            log.warning("semantic cache: judge call failed", extra={"error": f"{type(exc).__name__}: {exc}"})
            return
        if verdict is not None:
            self._record(pending, verdict)

    def _record(self, p: Pending, correct: bool) -> None:
        self.evidence.record(p.tenant, p.lang, p.lane, p.entry_id, p.similarity, correct)

    async def feedback(self, request_id: str, correct: bool,
                       drop: Callable[[str, str], Awaitable[int]]) -> dict[str, Any] | None:
        """The application's word on a served hit; None when the request id is unknown (or too old)."""
        served = self._served.pop(request_id, None)
        if served is None:
            return None
        self.evidence.record(served.tenant, served.lang, served.lane, served.entry_id, served.similarity, correct)
        dropped = 0
        if not correct:
            dropped = await drop(served.tenant, served.entry_id)
        return {"request_id": request_id, "tenant": served.tenant, "lane": served.lane, "correct": correct,
                "entry_dropped": bool(dropped)}

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.wait(list(self._tasks))
