"""The decision candidate by candidate (`gateway.semantic.candidates`): lanes, reasons, what to verify."""

from __future__ import annotations

from typing import Any

from gateway.semantic.candidates import CandidateJudge, Learning, Lookup, Review
from gateway.semantic.checks import OffLoopChecks
from gateway.semantic.guard import REWORDED, SAME_CONTENT, GuardParams
from gateway.semantic.learning import Learner
from gateway.semantic.store import Candidate, Scope

SCOPE = Scope("acme", "0" * 64, "", 0.0)


def cand(question: str, score: float, cid: str = "e1") -> Candidate:
    return Candidate(cid, score, question, {})


async def judge(params: GuardParams = GuardParams()) -> CandidateJudge:
    spawned: list[Any] = []
    checks = OffLoopChecks(params, spawned.append)
    await checks.load_all()
    return CandidateJudge(params, Learner(), checks)


async def accepted(j: CandidateJudge, question: str, cands: list[Candidate], asked: float = 0.90) -> tuple[
        list[tuple[str, str, str]], Review]:
    review = Review()
    look = Lookup(question, 0.90, 0.60, asked, 0.60)
    out = [(ok.cand.id, ok.lane, ok.pair_lang) async for ok in j.accepted(SCOPE, look, cands, Learning(), review)]
    return out, review


async def test_candidates_are_judged_best_first_with_a_reason_for_each_one_turned_down() -> None:
    j = await judge()
    question = "How do I cancel my gym membership?"
    out, review = await accepted(j, question, [
        cand("How do I freeze my gym membership?", 0.95, "slot"),  # another operation: a slot edit
        cand("How do I cancel my gym membreship?", 0.93, "typo"),  # the same content, misspelt
        cand("怎么取消健身房会员？", 0.92, "zh"),  # the other language
    ])
    assert out == [("typo", SAME_CONTENT, "en")]
    assert review.rejected == ["slot_edit", "cross_language"]
    assert review.explore is None


async def test_an_unproven_reworded_candidate_is_kept_for_verification() -> None:
    j = await judge()
    question = "Is there a way for me to reset my password quickly from my phone?"  # MiniLM ≈ 0.70: not sure
    out, review = await accepted(j, question, [cand("How do I reset my password?", 0.78)])
    assert out == []
    assert review.rejected[0].startswith("reworded:")
    assert review.explore is not None and review.explore.lane == REWORDED and review.explore.cand.id == "e1"


async def test_a_confident_reworded_candidate_is_accepted_and_a_raised_threshold_holds() -> None:
    cached = "How do I change the language of the mobile app?"
    question = "The mobile app is in the wrong language, how can I change it?"
    out, _ = await accepted(await judge(), question, [cand(cached, 0.80)])
    assert out == []  # by default the reworded lane waits for evidence
    j = await judge(GuardParams(reworded_bar_en=0.80, reworded_bar_zh=0.84))  # a deployment that opted in
    out, _ = await accepted(j, question, [cand(cached, 0.80)])
    assert out == [("e1", REWORDED, "en")]
    out, review = await accepted(j, question, [cand(cached, 0.80)], asked=0.99)  # the request asked for more
    assert out == [] and review.rejected == ["below_requested_threshold"]
