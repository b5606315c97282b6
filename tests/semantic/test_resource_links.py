"""The "operation swap" test of the guard's word-linking resources (`gateway_dev.bench.resource_links`):
no shipped table may say that the words in which two different questions differ mean the same."""

from __future__ import annotations

from gateway.semantic import guard
from gateway_dev.bench import resource_links as links


def test_the_wordnet_table_links_no_differing_words_of_a_hard_negative() -> None:
    # every hard-negative pair of dev, tune and held-out 1-7: `cancel` / `delete`, `country` / `state` …
    report = links.audit([r for r in links.BUILT_IN if r.name == "wordnet"], links.evaluation_sets())["wordnet"]
    assert report.negatives == []
    assert sum(report.positives.values()) > 0  # and it does link reusable pairs' words


def test_an_unsafe_resource_is_caught() -> None:
    rows = [{"lang": "en", "reuse": False, "kind": "operation_swap", "cached": "How do I cancel my order?",
             "query": "How do I delete my order?"},
            {"lang": "zh", "reuse": False, "kind": "operation_swap", "cached": "怎么取消订单？",
             "query": "怎么删除订单？"},
            {"lang": "en", "reuse": True, "kind": "synonym_swap", "cached": "How do I cancel my order?",
             "query": "How do I call off my order?"}]
    loose = [links.Resource("loose en", "en", lambda x, y: {x, y} == {"cancel", "delete"}),
             links.Resource("loose zh", "zh", lambda x, y: {x, y} == {"取消", "删除"})]
    reports = links.audit(loose, [("rows", rows)])
    assert [n[2] for n in reports["loose en"].negatives] == [(("cancel", "delete"),)]
    assert [n[2] for n in reports["loose zh"].negatives] == [(("取消", "删除"),)]
    assert not reports["loose en"].positives


def test_differing_words_are_those_the_other_side_lacks() -> None:
    en = links.differing_words("How do I cancel my orders?", "How do I delete an order?", "en")
    assert en == (["cancel"], ["delete"])
    da, db = links.differing_words("怎么取消订单？", "怎么删除订单？", "zh")
    assert "取消" in da and "删除" in db and "订单" not in da


def test_buy_and_sell_are_never_one_character_misspelt() -> None:
    # mǎi / mài: one syllable, two tones; the homophone step (an input-method slip) must not join them
    assert guard.decide("怎么买基金？", "怎么卖基金？", 0.99, 0.6).reason == "antonym"
    assert guard.decide("怎么修改登陆密码？", "怎么修改登录密码？", 0.99, 0.6).hit  # a real slip still is one


def test_the_chinese_rewrites_link_no_differing_words_of_a_hard_negative() -> None:
    # `老是` / `一直`, `啥` / `什么` …: rewrites of the text as written, offered its runs before analysis
    report = links.audit([r for r in links.BUILT_IN if r.name == "zh_rewrites"],
                         links.evaluation_sets())["zh_rewrites"]
    assert report.negatives == []
    assert sum(report.positives.values()) > 0


def test_a_rewrite_that_joins_two_operations_is_caught() -> None:
    rows = [{"lang": "zh", "reuse": False, "kind": "operation_swap", "cached": "怎么办理退货？",
             "query": "怎么取消退货？"}]
    joined = links.Resource("light verbs and more", "zh", lambda x, y: {x, y} == {"办理", "取消"}, raw=True)
    assert [n[2] for n in links.audit([joined], [("rows", rows)])["light verbs and more"].negatives] \
        == [(("办理", "取消"),)]


def test_the_contraction_rule_links_no_differing_words_of_a_hard_negative() -> None:
    # `appt` / `appointment`: an abbreviation that is no English word, every letter in the long word's order
    report = links.audit([r for r in links.BUILT_IN if r.name == "contraction"],
                         links.evaluation_sets())["contraction"]
    assert report.negatives == []
    assert links._contraction("appt", "appointment") and not links._contraction("apt", "appointment")


def test_the_negated_adjectives_link_no_differing_words_of_a_hard_negative() -> None:
    # `unavailable` / `available`: WordNet's antonym pairs of a prefix, read as `not available`
    report = links.audit([r for r in links.BUILT_IN if r.name == "negated"], links.evaluation_sets())["negated"]
    assert report.negatives == []
    assert links._negated("unavailable", "available") and not links._negated("invaluable", "valuable")
