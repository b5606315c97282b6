"""The Chinese rewrites (`gateway.semantic.normalize_zh`): each makes two forms of one question a
same-content hit, and each has a near miss that must still be told apart."""

from __future__ import annotations

import pytest

from gateway.semantic import guard
from gateway.semantic.lexical import analyze, parse_cn_number
from gateway.semantic.normalize_zh import chinese, ones_as_digits


def _hit(cached: str, query: str) -> bool:
    v = guard.decide(cached, query, 0.99, 0.6)
    return v.hit and v.lane == guard.SAME_CONTENT


@pytest.mark.parametrize(("cached", "query"), [
    # colloquial question words
    ("会员卡有什么用？", "会员卡有啥用？"),
    ("快递为什么还没到？", "快递为啥还没到？"),
    ("优惠券怎么用？", "优惠券咋用？"),
    # question phrases that stand for one question word
    ("退货审核要多久？", "退货审核要多长时间？"),
    ("积分何时清零？", "积分什么时候清零？"),
    ("在哪里修改收货人？", "在什么地方修改收货人？"),
    ("为什么扫码一直失败？", "扫码一直失败是什么原因？"),
    ("为什么扫码一直失败？", "扫码一直失败，这是怎么回事？"),
    ("能把积分转给家人吗？", "有办法把积分转给家人吗？"),
    ("怎么把积分转给家人？", "有没有什么办法把积分转给家人？"),
    ("怎么升级会员？", "怎样才能升级会员？"),
    ("年卡多少钱？", "年卡的价格是多少？"),
    ("申请需要什么条件？", "申请需要什么样的条件？"),
    # a request frame before a question word
    ("怎么申请发票？", "我想知道怎么申请发票？"),
    ("会员有哪些权益？", "想了解一下会员有哪些权益？"),
    ("积分什么时候过期？", "请告诉我积分什么时候过期？"),
    # a closing "how to deal with it" after a stated problem
    ("快递丢了怎么办？", "快递丢了，该如何处理？"),
    ("屏幕碎了怎么办？", "屏幕碎了，怎么解决呢？"),
    # negated modals are one negator
    ("为什么无法付款？", "为什么不能付款？"),
    ("为什么没法付款？", "为什么付款不了？"),
    ("没有办法绑定银行卡怎么办？", "不能绑定银行卡怎么办？"),
    # everyday forms of one function word
    ("小程序总是闪退怎么办？", "小程序一直闪退怎么办？"),
    ("三天以内可以退吗？", "三天内可以退吗？"),
    ("注销以后还能登录吗？", "注销之后还能登录吗？"),
    ("今日的订单什么时候发货？", "今天的订单什么时候发货？"),
    ("星期六营业吗？", "周六营业吗？"),
    ("礼拜天营业吗？", "周日营业吗？"),
    ("密码忘记了怎么办？", "密码忘了怎么办？"),
    ("卡弄丢了怎么补办？", "卡丢了怎么补办？"),
    ("客服能帮我退款吗？", "客服能退款吗？"),
    ("订单已经付款了还能改地址吗？", "订单付款了还能改地址吗？"),
    ("怎么退款？在线等，急！", "怎么退款？"),
    ("我司需要开专票吗？", "我们需要开专票吗？"),
    ("签名能重新上传吗？", "签名能重上传吗？"),
    # formal light verbs and generic heads
    ("如何办理挂失？", "怎么挂失？"),
    ("怎么进行实名认证？", "怎么实名认证？"),
    ("开机后出现黑屏怎么办？", "开机后黑屏怎么办？"),
    ("怎么开启夜间模式功能？", "怎么开启夜间模式？"),
    ("来电显示业务怎么开通？", "来电显示怎么开通？"),
    # numbers, in any notation
    ("充两千五能送多少？", "充2500能送多少？"),
    ("月租一百二贵吗？", "月租120贵吗？"),
    ("奖金3万要交税吗？", "奖金三万要交税吗？"),
    ("额度2.5万够用吗？", "额度25000够用吗？"),
    ("充五十块钱送多少？", "充50元送多少？"),
    ("下午4:30还能取件吗？", "下午四点半还能取件吗？"),
    ("早上9:00开门吗？", "早上九点开门吗？"),
    ("我们俩能共用一个账号吗？", "我们两个能共用一个账号吗？"),
    ("半年卡多少钱？", "六个月卡多少钱？"),
    ("工作满一年能休年假吗？", "工作满1年能休年假吗？"),
    ("第一次登录需要验证吗？", "第1次登录需要验证吗？"),
    ("退款一般两三天到账吗？", "退款一般2-3天到账吗？"),
    ("维修费三四百正常吗？", "维修费300-400正常吗？"),
])
def test_rewritten_forms_are_the_same_question(cached: str, query: str) -> None:
    assert _hit(cached, query), (analyze(cached).surface, analyze(query).surface)


@pytest.mark.parametrize(("cached", "query"), [
    # the question word is rewritten, what it asks about is not
    ("会员卡有什么用？", "积分卡有啥用？"),
    ("退货审核要多久？", "退款审核要多长时间？"),
    ("在哪里修改收货人？", "在什么地方修改手机号？"),
    ("为什么扫码一直失败？", "扫码支付失败是什么原因？"),
    # a frame goes only before a question word: what one wants to know is still content
    ("会员有哪些权益？", "我想了解会员权益"),
    ("怎么申请发票？", "我想知道怎么申请退款？"),
    # a handling verb with an object, or without a problem stated, is still a verb
    ("快递丢了怎么办？", "快递丢了怎么处理运费？"),
    ("退款怎么办？", "退款怎么处理？"),
    # `有办法` is `能`, `没办法` is a negation
    ("能把积分转给家人吗？", "没有办法把积分转给家人吗？"),
    # an everyday form stays apart from a different word
    ("小程序总是闪退怎么办？", "小程序有时闪退怎么办？"),
    ("注销以后还能登录吗？", "注销以前还能登录吗？"),
    ("星期六营业吗？", "周日营业吗？"),
    ("客服能帮我朋友退款吗？", "客服能退款吗？"),
    ("卡弄丢了怎么补办？", "卡弄坏了怎么补办？"),
    ("可以后台运行吗？", "可以前台运行吗？"),
    # the light verb goes, the verb it carries does not
    ("如何办理挂失？", "怎么解除挂失？"),
    ("怎么开启夜间模式功能？", "怎么关闭夜间模式？"),
    # different numbers stay different numbers
    ("充两千五能送多少？", "充2005能送多少？"),
    ("充一千零五能送多少？", "充1500能送多少？"),
    ("奖金3万要交税吗？", "奖金三千要交税吗？"),
    ("下午4:30还能取件吗？", "下午四点还能取件吗？"),
    ("半年卡多少钱？", "三个月卡多少钱？"),
    ("工作满一年能休年假吗？", "工作满2年能休年假吗？"),
    ("退款一般两三天到账吗？", "退款一般23天到账吗？"),  # a rough count is not a two-digit number
    ("维修费三四百正常吗？", "维修费340正常吗？"),
    # a lone 一 is "a" where the other side has no 1 in its place
    ("一个账号能绑几张卡？", "1个账号能绑1张卡吗？"),
])
def test_near_misses_stay_apart(cached: str, query: str) -> None:
    assert not _hit(cached, query), (analyze(cached).surface, analyze(query).surface)


def test_function_words_keep_their_own_readings() -> None:
    assert chinese("可以后台运行吗？") == "可以后台运行吗？"  # `可以` + `后台`, not `以后`
    assert chinese("如何处理退款？") == "如何处理退款？"  # `如何` + `处理`, not `何处`
    assert chinese("怎么求助？") == "怎么求助？"  # the plea is the question: nothing before it
    assert chinese("3万5") == "3万5"  # a colloquial 35000 is left as written


@pytest.mark.parametrize(("run", "value"), [("两千五", 2500), ("一百二", 120), ("三万五", 35000),
                                            ("一千零五", 1005), ("三千二百五", 3250), ("一千五百", 1500)])
def test_a_last_digit_after_a_unit_counts_the_next_unit_down(run: str, value: int) -> None:
    assert parse_cn_number(run) == value


def test_ones_as_digits_only_where_the_other_side_writes_1() -> None:
    assert ones_as_digits("满一年", "满1年") == ("满1年", "满1年")
    assert ones_as_digits("一个账号", "1张卡") == ("一个账号", "1张卡")
    assert ones_as_digits("统一收费", "收费1") == ("统一收费", "收费1")
