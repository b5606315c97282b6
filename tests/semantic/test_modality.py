"""Permission and necessity (`gateway.semantic.modality`): a yes/no question asking whether an action
is allowed and one asking whether it is required are two questions, in English and in Chinese; a
question asking whether something is required and one asking whether one may do without it are one
question from its two sides. Made-up sentences, none from an evaluation set."""

from __future__ import annotations

import pytest

from gateway.semantic import guard, modality, structure
from gateway.semantic.lexical import analyze


def _served(cached: str, query: str) -> bool:
    v = guard.decide(cached, query, 0.99, 0.6)
    if not (v.hit and v.lane == guard.SAME_CONTENT):
        return False
    lang = analyze(cached).lang
    return not structure.may_swap_roles(cached, query) or structure.roles_agree(cached, query, lang) is not False


@pytest.mark.parametrize(("cached", "query"), [
    ("Do I need a ticket to enter the museum?", "Can I enter the museum without a ticket?"),
    ("Is a ticket required to enter the museum?", "Can I enter the museum without a ticket?"),
    ("Do I need a helmet to ride the bike?", "Can I ride the bike with no helmet?"),
    ("Do I have to sign the form?", "Can I not sign the form?"),
    ("Without a receipt, can I return the lamp?", "Do I need a receipt to return the lamp?"),
    ("进馆必须带门票吗", "进馆可以不带门票吗"),
    ("骑车一定要戴头盔吗", "骑车可以不戴头盔吗"),
    ("没门票可以进馆吗", "进馆需要门票吗"),
])
def test_required_and_allowed_without_are_one_question(cached: str, query: str) -> None:
    assert _served(cached, query)
    assert _served(query, cached)


@pytest.mark.parametrize(("cached", "query", "reason"), [
    # the permission itself denied (¬◇X) answers something else than "is X required"
    ("Do I need a ticket to enter the museum?", "Can't I enter the museum with a ticket?", "negation"),
    ("Do I have to sign the form?", "Am I not allowed to sign the form?", "negation"),
    ("骑车一定要戴头盔吗", "骑车不能戴头盔吗", "negation"),
    ("骑车一定要戴头盔吗", "骑车不可以戴头盔吗", "negation"),
    # advice is no necessity: `should I sign` / `can I not sign` stay apart
    ("Should I sign the form?", "Can I not sign the form?", "negation"),
    # `can I not V` answers `must I V`, not `do I need X to V` (the thing, not the action)
    ("Do I need a ticket to enter the museum?", "Can I not enter the museum with a ticket?", "negation"),
    # the same modality on both sides, one negated: another question
    ("Can I enter the museum without a ticket?", "Can I enter the museum with a ticket?", "negation"),
    ("Must I enter the museum without a ticket?", "Must I enter the museum with a ticket?", "negation"),
    # with no negation the two modalities differ
    ("Do I need a ticket to enter the museum?", "Can I enter the museum with a ticket?", "modality"),
])
def test_near_misses_of_the_dual_stay_apart(cached: str, query: str, reason: str) -> None:
    assert guard.decide(cached, query, 0.99, 0.6).reason == reason


def test_a_reworded_pair_keeps_its_negation() -> None:
    """The dual is read on same-content pairs only: a reworded one keeps the negation as its marker."""
    v = guard.decide("Do I need a passport to board?", "Can I board without a visa?", 0.99, 0.6)
    assert not v.hit and v.reason == "negation"


@pytest.mark.parametrize(("cached", "query"), [
    ("进馆可以带水吗", "进馆需要带水吗"),
    ("进馆可以带水吗", "进馆必须带水吗"),
    ("骑车能戴耳机吗", "骑车一定要戴耳机吗"),
    ("入园可以带什么证件", "入园需要带什么证件"),  # which documents may / must: two questions
])
def test_chinese_permission_and_necessity_are_two_questions(cached: str, query: str) -> None:
    assert guard.decide(cached, query, 0.99, 0.6).reason == "modality"


@pytest.mark.parametrize(("cached", "query"), [
    ("进馆必须带证件吗", "进馆一定要带证件吗"),  # two necessity modals
    ("怎么才能退款", "怎么退款"),  # a method question: the modal frames it
    ("能带宠物吗", "可以带宠物吗"),
])
def test_chinese_one_modality_said_two_ways(cached: str, query: str) -> None:
    assert _served(cached, query)


def test_chinese_modality_reading() -> None:
    assert modality.zh_modality_of("进馆需要带水吗") == "obliged"
    assert modality.zh_modality_of("进馆可以带水吗") == "allowed"
    assert modality.zh_modality_of("怎么才能进馆") is None
    assert modality.zh_modality_of("进馆带水吗") is None


@pytest.mark.parametrize(("cached", "query"), [
    ("Is a deposit required to book a table?", "Do I need a deposit to book a table?"),
    ("What documents do I need to open an account?", "Which documents are required to open an account?"),
    ("Do I have to show my badge?", "Am I required to show my badge?"),
    ("Is a passport needed for the ferry?", "Do I need a passport for the ferry?"),
])
def test_need_said_in_the_passive(cached: str, query: str) -> None:
    assert _served(cached, query)


@pytest.mark.parametrize(("cached", "query"), [
    ("Is a deposit required to book a table?", "Is a deposit refundable?"),
    ("Am I required to show my badge?", "Can I show my badge?"),
    ("Are pets required in the cabin?", "Are pets allowed in the cabin?"),
    ("Do I need a deposit to book a table?", "Can I book a table with a deposit?"),  # need a thing / may use it
])
def test_need_in_the_passive_near_misses(cached: str, query: str) -> None:
    assert not guard.decide(cached, query, 0.99, 0.6).hit
