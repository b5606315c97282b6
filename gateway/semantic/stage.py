"""The semantic cache as a pipeline stage (after the exact response cache, before rewriting).

before(): when the request qualifies (`gateway.semantic.key.skip_reason`), embed the final user
question, search the tenant's entries of this exact context (`Scope`: tenant + context hash +
knowledge version + unexpired) and let `gateway.semantic.candidates` pick the first candidate that
may be served. A hit returns the stored answer with `semantic-hit` and its similarity; a share of
would-be hits (`verify_share`) goes upstream instead, to be compared.

after(): a qualifying miss answered completely by the upstream is written, in a background task
(the response never waits for it); a verified would-be hit's fresh answer becomes evidence.

Every failure of the embedder or the vector store is a plain miss: the request goes upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gateway.answer import Answer
from gateway.cache.entry import BadEntry
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.metrics import CACHE_LOOKUPS
from gateway.pipeline import Hit, Stage
from gateway.semantic import paraphrase, structure
from gateway.semantic.candidates import CandidateJudge, Learning, Lookup, Review
from gateway.semantic.checks import OffLoopChecks
from gateway.semantic.embedder import Embedder, backend_from_settings
from gateway.semantic.guard import REWORDED, cosine_for, similarity
from gateway.semantic.judge import Judge
from gateway.semantic.key import context_hash, skip_reason
from gateway.semantic.learning import Learner, Pending, Served
from gateway.semantic.lexical import analyze
from gateway.semantic.lifecycle import LayerLifecycle, open_vector_store
from gateway.semantic.options import SemanticOptions
from gateway.semantic.store import Entry, Scope, VectorStore

log = logging.getLogger("gateway.semantic")

__all__ = ["SemanticCacheStage", "open_vector_store"]  # the store factory lives in lifecycle.py

LAYER = "semantic"
THRESHOLD_HEADER = "x-gateway-semantic-threshold"


@dataclass(slots=True)
class _State:
    question: str
    ctx_hash: str
    version: str
    vector: np.ndarray | None = None
    hit: bool = False
    detail: dict[str, Any] = field(default_factory=dict)
    verify: Pending | None = None  # a would-be hit sent upstream: its fresh answer is compared
    served: Served | None = None



class SemanticCacheStage(LayerLifecycle, Stage):  # its start() and stop() before the base's
    name = "semantic_cache"

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None, store: VectorStore | None = None,
                 clock: Callable[[], float] = time.time, judge: Judge | None = None,
                 rng: random.Random | None = None, lazy: bool = False) -> None:
        """`embedder` and `store` may be shared objects built by the caller; otherwise they come from
        the settings (`GATEWAY_EMBEDDING_MODEL`, `GATEWAY_QDRANT_URL` / `GATEWAY_DATA_DIR`).

        `lazy`: `start()` loads nothing; the embedder, the guard's resources and the store load in the
        background once some tenant enables the layer (`prepare`, or that tenant's first request), so
        a gateway whose tenants leave the layer off never holds them (hundreds of MB, seconds of start-up).
        Until then the layer reports `state` "off" or "loading" and requests skip it."""
        self.settings = settings
        self.options = SemanticOptions.from_params(settings.semantic.params)
        if embedder is None:
            key = settings.vendor_key("openai")
            backend = backend_from_settings(settings.embedding_model, settings.base_url("openai"), key)
            embedder = Embedder(backend, window_ms=self.options.batch_window_ms, max_batch=self.options.max_batch,
                                cache_size=self.options.lru_size)
        self.embedder = embedder
        self.off_reason: str | None = None  # why the layer is off (shown by /readyz), None while it works
        self.store = store
        self.clock = clock
        self.learner = Learner(judge=judge, rng=rng)
        self.checks = OffLoopChecks(self.options.guard, self._spawn)
        self.judge = CandidateJudge(self.options.guard, self.learner, self.checks)
        self._open = False
        self._last_open_try = 0.0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._purger: asyncio.Task[None] | None = None
        self._last_warning = 0.0
        self.lazy = lazy
        self._load: asyncio.Task[None] | None = None
        self._loaded = False
        self._failed: str | None = None

    @property
    def anchor(self) -> float:
        return self.options.anchor_cosine if self.options.anchor_cosine is not None else self.embedder.anchor

    # ---- request path (the life cycle: gateway.semantic.lifecycle) ---------------------------------
    def _threshold(self, ctx: RequestContext, policy_threshold: float) -> float:
        raw = ctx.headers.get(THRESHOLD_HEADER)
        if raw is None:
            return policy_threshold
        try:
            asked = float(raw)
        except ValueError:
            asked = float("nan")
        if not 0.0 <= asked <= 1.0:
            raise GatewayError(400, f"{THRESHOLD_HEADER} must be a number between 0 and 1")
        return max(policy_threshold, asked)  # a request may only ask for safer hits

    async def before(self, ctx: RequestContext) -> Hit | None:
        policy = ctx.policy.semantic_cache if ctx.policy is not None else None
        user_scope = ctx.policy is not None and ctx.policy.response_cache.scope == "user"
        reason = skip_reason(ctx, policy, user_scope, self.options.max_question_chars)
        if reason is None and not self._loaded and self.lazy:
            self._begin_load()  # this tenant enabled the layer since start: load it, off the loop
            reason = "loading" if self._failed is None else "unavailable"
        elif reason is None and not self._open and not await self._ensure_open():
            reason = "unavailable"
        if reason is not None or policy is None:
            ctx.record["semantic_cache_skip"] = reason
            CACHE_LOOKUPS.labels(layer=LAYER, result="error" if reason == "unavailable" else "skip").inc()
            return None
        question = ctx.conversation.final_user_text or ""
        digest = context_hash(ctx, user_scope, policy.version, (self.embedder.name, self.embedder.dim))
        state = _State(question, digest, policy.version)
        ctx.scratch[self.name] = state
        asked = self._threshold(ctx, policy.threshold)
        if ctx.no_cache:  # a fresh answer is wanted: no lookup, still stored
            CACHE_LOOKUPS.labels(layer=LAYER, result="skip").inc()
            return None
        scope = Scope(ctx.tenant, digest, policy.version, self.clock())
        learning = Learning(policy.max_error_rate, policy.verify_share, policy.cross_language)
        try:
            found = await self.lookup(scope, question, policy.threshold, asked, policy.exclusive_terms, state,
                                      learning)
        except Exception as exc:
            CACHE_LOOKUPS.labels(layer=LAYER, result="error").inc()
            self._warn("semantic cache lookup failed; treated as a miss", exc, ctx)
            ctx.cache_status = "miss"
            return None
        if state.detail.get("rejected"):
            ctx.record["semantic_rejected"] = state.detail["rejected"]
        if state.verify is not None:
            ctx.record["semantic_verify"] = state.verify.lane
        if found is None:
            CACHE_LOOKUPS.labels(layer=LAYER, result="miss").inc()
            ctx.cache_status = "miss"  # a layer was consulted: not `bypass`, even with the response cache off
            return None
        answer, cosine = found
        CACHE_LOOKUPS.labels(layer=LAYER, result="hit").inc()
        if state.served is not None:
            self.learner.served_hit(ctx.request_id, state.served)
            ctx.record["semantic_lane"] = state.served.lane
        return self._hit(ctx, state, answer, cosine)

    async def lookup(self, scope: Scope, question: str, threshold: float, asked: float,
                     exclusive_terms: Sequence[Sequence[str]] = (), state: _State | None = None,
                     learning: Learning = Learning()) -> tuple[Answer, float] | None:
        """Embed, search inside `scope`, run the decision on the candidates best first: the first
        accepted one's answer and cosine, or None. Raises when the embedder or the store fails."""
        raw_threshold = cosine_for(threshold, self.anchor)
        vector = await asyncio.wait_for(self.embedder.embed(question), self.options.embed_timeout)
        if state is not None:
            state.vector = vector
        if self.store is None:
            raise RuntimeError("the semantic cache store is not open")
        floor = raw_threshold - self.options.guard.same_content_margin
        candidates = await self.store.search(scope, vector, self.options.top_k, floor)
        review = Review()
        look = Lookup(question, threshold, raw_threshold, asked, self.anchor, exclusive_terms)
        async for ok in self.judge.accepted(scope, look, candidates, learning, review):
            cand = ok.cand
            try:
                answer = cand.answer()
            except (BadEntry, KeyError, ValueError) as exc:
                self._warn("semantic cache entry unreadable; skipped", exc)
                continue
            if state is not None and self.learner.sample(learning.verify_share):
                state.verify = Pending(scope.tenant, ok.pair_lang, ok.lane, cand.id, cand.score, cand.question,
                                       answer.text, question)
                review.rejected.append("verification")
                break
            if state is not None:
                state.served = Served(scope.tenant, ok.pair_lang, ok.lane, cand.id, cand.score)
            return answer, cand.score
        if state is not None and state.verify is None and (ex := review.explore) is not None:
            with contextlib.suppress(BadEntry, KeyError, ValueError):  # it goes upstream anyway: compare for free
                state.verify = Pending(scope.tenant, ex.pair_lang, REWORDED, ex.cand.id, ex.cand.score,
                                       ex.cand.question, ex.cand.answer().text, question)
        if state is not None and review.rejected:
            state.detail["rejected"] = review.rejected
        return None

    async def feedback(self, request_id: str, correct: bool) -> dict[str, Any] | None:
        """Admin API: the application says whether the hit served to `request_id` was right."""
        return await self.learner.feedback(request_id, correct, self._drop)

    async def _drop(self, tenant: str, entry_id: str) -> int:
        self.learner.evidence.forget(entry_id)
        if self.store is None or not await self._ensure_open():
            return 0
        try:
            return await self.store.delete(tenant, [entry_id])
        except Exception as exc:
            self._warn("semantic cache: could not drop an entry shown wrong", exc)
            return 0

    def _hit(self, ctx: RequestContext, state: _State, answer: Answer, cosine: float) -> Hit:
        state.hit = True
        sim = round(similarity(cosine, self.anchor), 4)
        ctx.cache_status = "semantic-hit"
        ctx.record["saved_from"] = {"layer": LAYER, "usage_raw": answer.usage_raw, "provider": answer.provider,
                                    "model": answer.model}
        ctx.record["semantic_similarity"] = sim
        return Hit(status="semantic-hit", answer=answer, similarity=sim)

    async def after(self, ctx: RequestContext) -> None:
        state: _State | None = ctx.scratch.get(self.name)
        answer = ctx.answer
        if state is None or state.hit or answer is None or ctx.no_store or ctx.policy is None:
            return
        if ctx.answered_by != "upstream":
            return
        policy = ctx.policy.semantic_cache
        if state.verify is not None and answer.finish_reason == "stop":
            self.learner.verified(state.verify, answer.text, policy.judge_model)
        storable = answer.finish_reason == "stop" or (answer.finish_reason == "tool_calls"
                                                      and policy.cache_tool_requests)
        if not storable:
            return
        now = self.clock()
        entry = Entry(ctx.tenant, state.ctx_hash, state.version, state.question, answer, now, now + policy.ttl)
        task = asyncio.create_task(self._write(entry, state.vector), name="semantic-write")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, entry: Entry, vector: np.ndarray | None) -> None:
        try:
            if vector is None:
                vector = await self.embedder.embed(entry.question)
            if self.store is None or not await self._ensure_open():
                return
            await self.store.upsert([(entry, vector)])
            await self.prepare_question(entry.question)
        except Exception as exc:
            self._warn("semantic cache write failed; answer not stored", exc)

    async def prepare_question(self, question: str) -> None:
        """A stored English question's parse (and its MiniLM vector where the second opinion is
        loaded), made now in the background (batched with other writes and lookups) instead of on the
        first lookup that meets it: the same results, in the caches the checks read. The parse is
        prepared without MiniLM too (the default: `reworded_bar_en` > 1 never loads it), since the
        same-content lane's placement and role checks read it as well."""
        if analyze(question).lang != "en" or not structure.ready("en"):
            return
        vectors = (question,) if paraphrase.ready() else ()  # never load MiniLM for this alone
        await self.checks.batch.run(_nothing, parse=(question,), vectors=vectors)

    async def drain(self) -> None:
        """Wait for pending writes and judge calls (tests, shutdown)."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))
        await self.learner.drain()

    def _spawn(self, aw: Any) -> None:
        task = asyncio.ensure_future(aw)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _nothing() -> None:
    """The preparation is the whole job (`prepare_question`)."""
