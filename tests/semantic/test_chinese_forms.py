"""More Chinese forms of one question (`normalize_zh`, `lexical`): event order said three ways, a
classifier after `两`, `每个月` / `每月`, `块` / `元` between two questions. Each a positive and a near
miss; made-up sentences, none from an evaluation set."""

from __future__ import annotations

import pytest

from gateway.semantic import guard, normalize_zh


def _same(cached: str, query: str) -> bool:
    v = guard.decide(cached, query, 0.99, 0.6)
    return v.hit and v.lane == guard.SAME_CONTENT


@pytest.mark.parametrize(("cached", "query"), [
    ("先洗车再打蜡可以吗", "洗车之后再打蜡可以吗"),
    ("先洗车再打蜡可以吗", "打蜡之前先洗车可以吗"),
    ("先洗车再打蜡吗", "打蜡之前要先洗车吗"),
    ("先交押金后取钥匙吗", "先交押金再取钥匙吗"),
    ("一次能借两本书吗", "一次能借2本书吗"),
    ("一次能停两辆车吗", "一次能停2辆车吗"),
    ("每个月能改几次密码", "每月能改几次密码"),
    ("满99元包邮吗", "满九十九块包邮吗"),
])
def test_one_question_said_two_ways(cached: str, query: str) -> None:
    assert _same(cached, query)
    assert _same(query, cached)


@pytest.mark.parametrize(("cached", "query"), [
    ("先洗车再打蜡可以吗", "打蜡之后再洗车可以吗"),  # the order turned round
    ("先洗车再打蜡可以吗", "洗车之前先打蜡可以吗"),
    ("先交押金后取钥匙吗", "先取钥匙后交押金吗"),
    ("一次能停两辆车吗", "一次能停3辆车吗"),
    ("满99元包邮吗", "满九十块包邮吗"),
    ("两块蛋糕多少钱", "2元蛋糕多少钱"),  # pieces, not yuan: a noun follows `块`
])
def test_near_misses(cached: str, query: str) -> None:
    assert not guard.decide(cached, query, 0.99, 0.6).hit


def test_the_rewrites_themselves() -> None:
    assert normalize_zh.chinese("洗车之后再打蜡可以吗") == "先洗车再打蜡可以吗"
    assert normalize_zh.chinese("打蜡之前要先洗车吗") == "要先洗车再打蜡吗"
    assert normalize_zh.chinese("下单之前能取消吗") == "下单之前能取消吗"  # no `先`: nothing ordered
    assert normalize_zh.kuai_as_yuan("满99元包邮吗", "满99块包邮吗") == ("满99元包邮吗", "满99元包邮吗")
    assert normalize_zh.kuai_as_yuan("2元蛋糕", "2块蛋糕") == ("2元蛋糕", "2块蛋糕")
