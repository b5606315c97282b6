"""Which of the entries found for a question may be served: the decision, candidate by candidate.

The stage searches the tenant's entries (best cosine first) and hands them here. Each candidate goes
through the decision (`gateway.semantic.guard.decide`) and then its lane's own condition:

- *same content*: served, unless (English) the parse shows that the parties changed roles;
- *reworded*: served when the evidence bound for this tenant, language and lane allows it and the
  two questions' structure agrees, or — before or beside the evidence — when the second opinion is
  confident (`OffLoopChecks.confident`), the pair is not marked (negation, scope, polarity words) and
  neither this entry nor a pair at least as similar was shown wrong.

`CandidateJudge.accepted` yields the acceptable candidates in order; the stage reads the first one's
answer (an unreadable entry: the next) and decides whether to serve or to verify it. What was turned
down, and why, is written to a `Review`, with the best reworded candidate the evidence did not yet
allow (it goes upstream anyway, so its answer can be compared for free).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from gateway.semantic.checks import OffLoopChecks
from gateway.semantic.guard import REWORDED, SAME_CONTENT, GuardParams, decide, similarity
from gateway.semantic.learning import Learner
from gateway.semantic.lexical import analyze
from gateway.semantic.store import Candidate, Scope


@dataclass(frozen=True, slots=True)
class Learning:
    """The tenant's evidence settings for one lookup (policy `semantic_cache.*`)."""

    max_error_rate: float = 0.01
    verify_share: float = 0.0
    cross_language: bool = False


@dataclass(frozen=True, slots=True)
class Accepted:
    cand: Candidate
    lane: str  # SAME_CONTENT or REWORDED
    pair_lang: str  # the question's language, or "mixed" when the cached one is in another


@dataclass(slots=True)
class Review:
    rejected: list[str] = field(default_factory=list)  # one reason per candidate turned down
    explore: Accepted | None = None  # the best reworded candidate the evidence did not yet allow


@dataclass(frozen=True, slots=True)
class Lookup:
    """One question's lookup: the policy threshold (similarity scale) and its cosine, the threshold the
    request asked for (never below the policy's), and the tenant's exclusive terms."""

    question: str
    threshold: float
    raw_threshold: float
    asked: float
    anchor: float
    exclusive_terms: Sequence[Sequence[str]] = ()


class CandidateJudge:
    def __init__(self, guard: GuardParams, learner: Learner, checks: OffLoopChecks) -> None:
        self.guard = guard
        self.learner = learner
        self.checks = checks

    async def accepted(self, scope: Scope, look: Lookup, candidates: Sequence[Candidate], learning: Learning,
                       review: Review) -> AsyncIterator[Accepted]:
        """The candidates that may be served, best first (the reasons for the others go to `review`)."""
        lang = analyze(look.question).lang
        for cand in candidates:
            args = (cand.question, look.question, cand.score, look.raw_threshold, look.exclusive_terms, self.guard,
                    learning.cross_language)
            # The parse-free rules here; only a would-be same-content hit is decided again with the
            # placement rule, whose parse runs in the checks' worker thread.
            verdict = decide(*args, placement_check=False)
            roles_ok: bool | None = None  # the role check, when the worker already made it
            if verdict.hit and verdict.lane == SAME_CONTENT and cand.question != look.question:
                verdict, roles_ok = await self.checks.decide_same_content(*args, lang=lang)
            if (look.asked > look.threshold and similarity(cand.score, look.anchor) < look.asked
                    and (verdict.hit or verdict.lane)):
                review.rejected.append("below_requested_threshold")
                continue
            pair_lang = lang if analyze(cand.question).lang == lang else "mixed"
            if verdict.reason == REWORDED:
                reason, unproven = await self._reworded(scope, look.question, cand, pair_lang, verdict.marked,
                                                        learning)
                if reason is not None:
                    review.rejected.append(reason)
                    if unproven:
                        review.explore = review.explore or Accepted(cand, REWORDED, pair_lang)
                    continue
            elif not verdict.hit:
                review.rejected.append(verdict.reason)
                continue
            elif (pair_lang == "en" and cand.question != look.question
                  and not (roles_ok if roles_ok is not None
                           else await self.checks.roles_agree(cand.question, look.question))):
                review.rejected.append("role_swap")
                continue
            yield Accepted(cand, verdict.lane, pair_lang)

    async def _reworded(self, scope: Scope, question: str, cand: Candidate, pair_lang: str, marked: bool,
                        learning: Learning) -> tuple[str | None, bool]:
        """Why a reworded candidate may not be served (None: it may), and whether it was turned down
        for want of evidence (then it is worth verifying)."""
        gate = self.learner.gate(scope.tenant, pair_lang, REWORDED, cand.id, cand.score, learning.max_error_rate)
        if not gate.serve:
            # Before (or beside) the evidence: a very confident second opinion whose structure
            # agrees, unless this entry or a pair at least as similar was shown wrong.
            if (pair_lang == "mixed" or marked or gate.reason == "entry_shown_wrong"
                    or self.learner.evidence.wrong_above(scope.tenant, pair_lang, REWORDED, cand.score)
                    or not await self.checks.confident(cand.question, question, pair_lang, cand.score)):
                return f"reworded:{gate.reason}", True
            return None, False
        if pair_lang != "mixed":
            agree = await self.checks.agree(cand.question, question, pair_lang)
            if agree is not True:
                return ("reworded:structure" if agree is False else "reworded:no_parser"), False
        return None, False
