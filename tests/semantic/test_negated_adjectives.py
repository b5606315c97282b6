"""An adjective negated by its prefix and `not` with the adjective (`normalize.negated_as_not`, from
WordNet's antonym pairs): one question, when the other question says the adjective. Made-up sentences,
none from an evaluation set."""

from __future__ import annotations

import pytest

from gateway.semantic import guard, normalize


@pytest.mark.parametrize(("cached", "query"), [
    ("Why is the lounge not available tonight?", "Why is the lounge unavailable tonight?"),
    ("Is my voucher invalid?", "Is my voucher not valid?"),
    ("Can I cancel if I'm not happy with the tour?", "Can I cancel if I'm unhappy with the tour?"),
    ("Is the glaze nontoxic?", "Is the glaze not toxic?"),
    ("Is the glaze non-toxic?", "Is the glaze not toxic?"),
])
def test_prefix_negation_is_not(cached: str, query: str) -> None:
    v = guard.decide(cached, query, 0.99, 0.6)
    assert v.hit and v.lane == guard.SAME_CONTENT
    assert guard.decide(query, cached, 0.99, 0.6).hit


@pytest.mark.parametrize(("cached", "query"), [
    ("Is my voucher invalid?", "Is my voucher valid?"),  # the opposite stays the opposite
    ("Why is the lounge unavailable tonight?", "Why is the lounge available tonight?"),
    ("Is this vase invaluable?", "Is this vase not valuable?"),  # no antonym pair: `invaluable` is priceless
    ("How do I unlock the door?", "How do I not lock the door?"),  # a verb that undoes is no negation
])
def test_prefix_negation_near_misses(cached: str, query: str) -> None:
    assert not guard.decide(cached, query, 0.99, 0.6).hit


def test_only_when_the_other_question_says_the_adjective() -> None:
    # `incredible` has drifted from `credible`: read as `not credible` only beside `credible`
    view = ("an incredible view", "an amazing view")
    assert normalize.negated_as_not(*view) == view
    assert normalize.negated_as_not("an incredible story", "a credible story")[0] == "an not credible story"
    assert normalize.negated_as_not("is it unavailable", "is it available") == ("is it not available",
                                                                                 "is it available")
