"""More English forms of one question (`normalize.english`, `lexicon.EN_STOP_FORMS`): a courtesy
opener, a function verb inflected, `whenever`, a bare `%`, availability for an action. Each a positive
and a near miss; made-up sentences, none from an evaluation set."""

from __future__ import annotations

import pytest

from gateway.semantic import guard
from gateway.semantic.lexical import analyze


def _same(cached: str, query: str) -> bool:
    v = guard.decide(cached, query, 0.99, 0.6)
    return v.hit and v.lane == guard.SAME_CONTENT


@pytest.mark.parametrize(("cached", "query"), [
    ("Is parking included in the ticket?", "Excuse me, is parking included in the ticket?"),
    ("Why is the screen dark when I plug in the charger?",
     "Why does the screen get dark whenever I plug in the charger?"),
    ("Why does my upload get stuck?", "Why does my upload gets stuck?"),
    ("What percentage fee do you charge sellers?", "what % fee do you charge sellers"),
    ("What percentage fee do you charge sellers?", "what percent fee do you charge sellers"),
    ("Can I rent paddle boards at the lake?", "Are paddle boards available to rent at the lake?"),
])
def test_one_question_said_two_ways(cached: str, query: str) -> None:
    assert _same(cached, query)


@pytest.mark.parametrize(("cached", "query"), [
    ("Excuse me, is parking included in the ticket?", "Is parking refunded with the ticket?"),
    ("Can I buy paddle boards at the lake?", "Are paddle boards available to rent at the lake?"),
    ("What is the fee for 5% of sales?", "What is the fee for 6% of sales?"),
    ("Why is the screen dark when I plug in the charger?", "Why is the screen dark when I unplug the charger?"),
])
def test_near_misses(cached: str, query: str) -> None:
    assert not guard.decide(cached, query, 0.99, 0.6).hit


def test_a_slip_is_never_read_as_an_inflected_function_word() -> None:
    # `gest` is one letter swap from `gets`, one letter short of `guest`: it stays the content word's slip
    assert _same("How do I add a gest to my list?", "How do I add a guest to my list?")


def test_availability_for_people_is_no_action() -> None:
    # `available to members` names who, not what is done
    assert "can i" not in analyze("Is the lounge available to members?").text
    assert "percentage" in analyze("what % fee").text and "percentage" not in analyze("a 5% fee").text


@pytest.mark.parametrize(("cached", "query"), [
    ("I want 3 tickets per show instead of 1", "I'd like three tickets a show instead of one"),
    ("What happens if my flight is delayed?", "what if my flight is delayed"),
    ("How long does the approval process take?", "How long does approval take?"),
    ("Is the fee $5 per month?", "Is the fee $5 a month?"),
])
def test_quantities_and_frames_said_two_ways(cached: str, query: str) -> None:
    assert _same(cached, query)


@pytest.mark.parametrize(("cached", "query"), [
    ("I want 3 tickets per show instead of 1", "I want 1 ticket per show instead of 3"),
    ("I want 3 tickets per show instead of 1", "I want three tickets per show instead of two"),
    ("How long does the approval process take?", "How long does the refund process take?"),
    ("What happens if my flight is delayed?", "What happens if my flight is cancelled?"),
])
def test_quantities_and_frames_near_misses(cached: str, query: str) -> None:
    assert not guard.decide(cached, query, 0.99, 0.6).hit
