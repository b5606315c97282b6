"""The same content words in other places: a moved negation or exchanged nouns is another question;
word order alone (a clause moved to the front, a passive) is not."""

import pytest

from gateway.semantic import guard, placement, structure
from gateway.semantic.lexical import analyze

pytestmark = pytest.mark.skipif(structure._spacy() is None, reason="no English parser installed")


@pytest.mark.parametrize(("cached", "query", "lang"), [
    ("Can I renew the lease but not move the deposit?", "Can I move the deposit but not renew the lease?", "en"),
    ("Does the tutor get a text when the student joins?", "Does the student get a text when the tutor joins?", "en"),
    ("Can the seller rate the buyer after the sale?", "Can the buyer rate the seller after the sale?", "en"),
    ("可以只充电不洗车吗？", "可以只洗车不充电吗？", "zh"),
    ("老师取消课程时家长要付费吗？", "家长取消课程时老师要付费吗？", "zh"),
])
def test_other_places_are_another_question(cached: str, query: str, lang: str) -> None:
    assert placement.moved(cached, query, lang)
    assert guard.check(analyze(cached), analyze(query))[0] == "placement"


@pytest.mark.parametrize(("cached", "query", "lang"), [
    ("If the printer jams, what should I do?", "What should I do if the printer jams?", "en"),
    ("Can the tutor cancel the lesson that I booked?", "Can the lesson that I booked be cancelled by the tutor?", "en"),
    ("Does the plan include calls but not texts?", "Are calls but not texts included in the plan?", "en"),
    ("课程被老师取消了怎么办？", "老师取消了课程怎么办？", "zh"),
    ("我不在家的时候快递能放门口吗？", "快递能放门口吗，我不在家的时候？", "zh"),
])
def test_word_order_alone_keeps_the_places(cached: str, query: str, lang: str) -> None:
    assert not placement.moved(cached, query, lang)


def test_third_person_pronouns_are_left_out() -> None:
    """`it` may stand for either noun: its place is no evidence either way."""
    _neg, args, _said = placement.places("Is the poster framed before it is shipped?", "en")  # type: ignore[misc]
    assert "it" not in args and "poster" in args
