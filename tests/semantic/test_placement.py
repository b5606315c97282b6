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
    _neg, args, _said, _units, _verbs = placement.places("Is the poster framed before it is shipped?", "en")  # type: ignore[misc]
    assert "it" not in args and "poster" in args


@pytest.mark.parametrize(("cached", "query", "lang"), [
    # nouns the tagger gives no verb (`可以` read as a conjunction, `替` as a preposition)
    ("学生可以替家长签到吗？", "家长可以替学生签到吗？", "zh"),
    # event order: the same two events, the other one first
    ("是先付款再发货吗？", "是先发货再付款吗？", "zh"),
    # a coordinator's character inside another word (`同意`) coordinates nothing
    ("卖家不同意退款的话买家能投诉吗？", "买家不同意退款的话卖家能投诉吗？", "zh"),
    ("Can I pay with points instead of cash?", "Can I pay with cash instead of points?", "en"),
    ("Is the tenant charged when the landlord cancels the viewing?",
     "Is the landlord charged when the tenant cancels the viewing?", "en"),
    # a coordinator in the middle, but the exchanged stretches modify the verbs on either side of it
    ("Can I book online and pay at the desk?", "Can I book at the desk and pay online?", "en"),
])
def test_exchanged_stretches_are_another_question(cached: str, query: str, lang: str) -> None:
    a, b = placement.places(cached, lang), placement.places(query, lang)
    assert a is not None and b is not None
    assert placement._stretches_exchanged(a[3], b[3], lang, a[4])
    assert placement.moved(cached, query, lang)


@pytest.mark.parametrize(("cached", "query", "lang"), [
    ("定期和活期有什么区别？", "活期和定期有什么区别？", "zh"),  # coordinated: either order
    ("是先付款再发货还是先发货再付款？", "是先发货再付款还是先付款再发货？", "zh"),  # both orders asked
    ("快递员没来但订单显示已送达", "订单显示已送达但快递员没来", "zh"),  # two statements joined
    ("订单发货以后还能取消吗？", "还能取消发货以后的订单吗？", "zh"),  # `的` makes it one thing
    ("What is the difference between a loan and a lease?", "What is the difference between a lease and a loan?", "en"),
    ("Does the buyer or the seller pay the fee?", "Does the seller or the buyer pay the fee?", "en"),
    # two whole clauses exchanged around `or`, a shared object left between them
    ("Do you mail the form or do I pick it up?", "Do I pick up the form or do you mail it?", "en"),
    ("If the app crashes, is my progress saved?", "Is my progress saved if the app crashes?", "en"),
    ("The parcel arrived late but the tracking said delivered.",
     "The tracking said delivered but the parcel arrived late.", "en"),
])
def test_symmetric_or_moved_clauses_are_no_exchange(cached: str, query: str, lang: str) -> None:
    assert not placement.moved(cached, query, lang)


def test_a_negation_read_across_a_particle() -> None:
    """`没扣钱` negates what `扣了钱` says: the negation moved from the order to the charge."""
    assert placement.moved("为什么没预订的房间也扣了钱？", "为什么预订的房间没扣钱？", "zh")
    assert not placement.moved("为什么没预订的房间也扣了钱？", "为什么没有预订的房间也扣了钱？", "zh")


@pytest.mark.parametrize(("cached", "query"), [
    # the subject of `have to` / `need to` does the verb it controls
    ("Do you carry the boxes upstairs for me?", "Do I have to carry the boxes upstairs for you?"),
    # the same action, done by the other party named in both
    ("Can the courier leave my parcel at the gate if I'm out?",
     "Can I leave my parcel at the gate for the courier if I'm out?"),
])
def test_the_doer_changed_is_another_question(cached: str, query: str) -> None:
    assert placement.moved(cached, query, "en")


@pytest.mark.parametrize(("cached", "query"), [
    ("Do I have to carry the boxes upstairs?", "Do I need to carry the boxes upstairs?"),
    ("Can the courier leave my parcel at the gate?", "Can my parcel be left at the gate by the courier?"),
    # a copula's subject is what is asked about, not a doer
    ("What's the warranty on the X9 speaker?", "How long is the X9 speaker covered by the warranty?"),
])
def test_the_same_doer_in_other_words_is_kept(cached: str, query: str) -> None:
    assert not placement.moved(cached, query, "en")


@pytest.mark.parametrize(("text", "scope"), [
    ("我可以让别人替我取药吗？", set()),  # `别人` (others) only begins with a negator's character
    ("无线网络怎么设置？", set()),  # `无线` (wireless) negates nothing
    ("以后会不会涨价？", set()),  # `会不会`: a yes/no question
    ("无线网络不能连接怎么办？", {"连接"}),  # a negated modal negates the verb after it
])
def test_what_a_chinese_negator_scopes_over(text: str, scope: set[str]) -> None:
    places = placement.places(text, "zh")
    assert places is not None
    assert {s.split("+")[0] for s in places[0]} == scope


@pytest.mark.parametrize(("cached", "query", "lang"), [
    ("打完针不能洗澡吗？", "打完针别洗澡吗？", "zh"),  # the same verb negated two ways
    ("年假没休完能顺延吗？", "没休完的年假能顺延吗？", "zh"),  # `没休|完` / `没|休完`: one scope
    ("Has the castle never been sold or rented?", "Has the castle never been rented or sold?", "en"),
    ("Why does the printer not start? How can I fix it?", "Why doesn't the printer start? How do I fix it?", "en"),
])
def test_one_negation_read_two_ways_is_kept(cached: str, query: str, lang: str) -> None:
    assert not placement.moved(cached, query, lang)


def test_a_negation_does_not_reach_into_a_clause_of_its_own() -> None:
    assert placement.moved("My courier did not show up but the order was charged.",
                           "My courier showed up but the order was not charged.", "en")


def test_a_negated_modal_moved_to_the_other_verb() -> None:
    """`不能退款` negates the refund, not `能`: moved to the exchange it is another question."""
    assert placement.moved("不能退款但能换货吗？", "能退款但不能换货吗？", "zh")


@pytest.mark.parametrize(("cached", "query", "lang"), [
    # the tagger may read a word as a noun in one sentence and a verb in the other: units are stems
    ("My horse kicked the farmer's goat, is it covered?", "The farmer's goat kicked my horse, is it covered?", "en"),
    # a possessor that owns another thing, both things named in both
    ("Is my landlord's car covered if it hits my fence?", "Is my car covered if it hits my landlord's fence?", "en"),
    # persons are content units of an exchange
    ("我可以替我爸爸签字吗？", "我爸爸可以替我签字吗？", "zh"),
    # a one-character adverb glued to the verb (先付, 再取) is two words
    ("先付款再取货可以吗？", "先取货再付款可以吗？", "zh"),
    # a phase complement (写完 / 开完会) is left out of the exchange
    ("先写完报告才能开会吗？", "先开完会才能写报告吗？", "zh"),
])
def test_exchanges_the_tags_and_segments_hide(cached: str, query: str, lang: str) -> None:
    assert placement.moved(cached, query, lang)
    assert guard.check(analyze(cached), analyze(query))[0] == "placement"


@pytest.mark.parametrize(("cached", "query", "lang"), [
    ("Is my landlord's car covered if it hits a fence?", "If it hits a fence, is my landlord's car covered?", "en"),
    ("Does my policy cover my neighbor's tree?", "Does my policy cover the tree of my neighbor?", "en"),
    ("Is my neighbor's tree covered by my policy?", "Does my policy cover my neighbor's tree?", "en"),
    ("我和我妈妈可以一起取药吗？", "我妈妈和我可以一起取药吗？", "zh"),
    ("先付款再取货可以吗？", "可以先付款再取货吗？", "zh"),
    ("写完报告才能开会吗？", "报告写完才能开会吗？", "zh"),
])
def test_the_same_shapes_in_order_are_kept(cached: str, query: str, lang: str) -> None:
    assert not placement.moved(cached, query, lang)
    assert guard.check(analyze(cached), analyze(query))[0] is None


def test_a_negated_verb_takes_a_fixed_expression_as_its_object() -> None:
    """jieba tags some compounds `l` (a fixed expression): still what the negated verb takes."""
    tagged = (("保修", "v"), ("包括", "v"), ("显示器", "n"), ("但", "c"), ("不", "d"), ("包括", "v"),
              ("切割器", "l"), ("吗", "y"))
    assert placement._zh_places(tagged)[0] == {"包括+切割器"}
    swapped = (("保修", "v"), ("包括", "v"), ("切割器", "l"), ("但", "c"), ("不", "d"), ("包括", "v"),
               ("显示器", "n"), ("吗", "y"))
    assert placement._negation_moved(placement._zh_places(tagged), placement._zh_places(swapped))
    kept = (("保修", "v"), ("不", "d"), ("包括", "v"), ("切割器", "l"), ("但", "c"), ("包括", "v"),
            ("显示器", "n"), ("吗", "y"))
    assert not placement._negation_moved(placement._zh_places(tagged), placement._zh_places(kept))


def test_a_verb_and_a_noun_of_one_root_exchanged_between_two_places() -> None:
    """`prepay … before the delivery` / `deliver … before the prepayment`: the aligner matches each word
    with its derivation, so the exchange is read on the words' shared roots."""
    assert placement.moved("Do I prepay the order before the delivery?",
                           "Do I deliver the order before the prepayment?", "en")
    assert not placement.moved("Can I reschedule the appointment?", "Can I reschedule my appointments?", "en")
