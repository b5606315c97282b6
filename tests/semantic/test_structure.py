"""The structure checks: the main action and its object (reworded lane), and parties that changed
places (same-content lane) — from spaCy's English parse and, for Chinese, persons and word order."""

from __future__ import annotations

from gateway.semantic import structure
from gateway.semantic.guard import decide


def test_action_and_object_must_agree() -> None:
    assert structure.agree("How do I change the language of the mobile app?",
                           "The mobile app is in the wrong language, how can I change it?", "en") is True
    # the same action on another object, another action on the same object
    assert structure.agree("I forgot my password, how do I reset it?", "How do I reset my username?", "en") is False
    assert structure.agree("How do I cancel my gym membership?", "How do I freeze my gym membership?", "en") is False
    assert structure.agree("怎么取消自动续费？", "自动续费扣款失败怎么办？", "zh") is False


def test_phrasal_verbs_and_misread_roots() -> None:
    verbs = structure.frame("How do I set up my voicemail?", "en")
    assert verbs is not None and verbs.operation == "set up"
    cost = structure.frame("How much does an extra checked bag cost on a flight?", "en")  # `cost` read as a noun
    assert cost is not None and cost.operation == "cost"  # and `checked` (a modifier) is no action


def test_parties_that_changed_places_are_caught_in_both_languages() -> None:
    a, b = "Can I add my daughter to my phone plan?", "Can my daughter add me to her phone plan?"
    # every word has its counterpart: the words alone cannot tell, their places can (`placement`)
    assert decide(a, b, 0.98, 0.6).reason == "placement"
    assert structure.may_swap_roles(a, b) and structure.roles_agree(a, b, "en") is False
    passive = ("Can I undo my edits after saving?", "Can my edits be undone by other editors after saving?")
    assert structure.roles_agree(*passive, "en") is False  # another party does it
    same = ("How do I export a report to PDF?", "In the app, how can I export a report to PDF?")
    assert structure.roles_agree(*same, "en") is True
    assert not structure.may_swap_roles("How do I reset my pasword?", "How do I reset my password?")  # no parse
    persons = ("Do you wash the car for me?", "Do I have to wash the car for you?")  # same persons, moved
    assert structure.may_swap_roles(*persons) and structure.roles_agree(*persons, "en") is False
    assert decide("怎么把优惠券送给朋友？", "朋友怎么把优惠券送给我？", 0.97, 0.6).reason == "role_swap"
    assert decide("怎么修改收货地址？", "收货地址怎么修改？", 0.97, 0.6).hit  # reordered, no party moved


def test_a_controlled_verb_gets_its_doer_from_a_passive_or_adjectival_head() -> None:
    # `Is my son allowed to use …`: the son uses it; `Can I use the laptop my son bought?`: I do
    allowed = structure.frame("Is my son allowed to use my laptop?", "en")
    assert allowed is not None and ("use", "son", "laptop") in allowed.roles
    able = structure.frame("Is my sister able to borrow my library card?", "en")
    assert able is not None and ("borrow", "sister", "card") in able.roles
    assert structure.agree("Is my son allowed to use my laptop?", "Can I use the laptop my son bought?", "en") is False
    assert structure.agree("Is my son allowed to use my laptop?", "Can my son use the laptop I bought?", "en") is True


def test_a_chinese_person_on_the_other_side_of_the_shared_words_changed_roles() -> None:
    # the same words and the same persons, but the one who calls and the one called are exchanged
    assert decide("下单后客服会打电话给我吗？", "下单后我要打电话给客服吗？", 0.97, 0.6).reason == "role_swap"
    assert not structure.zh_roles_moved("我的快递放在门口了", "门口放着我的快递")  # a possessive names a thing
    assert not structure.zh_roles_moved("我怎么修改收货地址？", "我收货地址怎么修改？")  # nothing crossed the person


def test_a_chinese_time_or_condition_clause_moved_whole_keeps_the_roles() -> None:
    # the clause with the person moves as a whole: everyone keeps their place in their own clause
    assert not structure.zh_roles_moved("如果我不在家，快递员能放门口吗？", "快递员能放门口吗，如果我不在家？")
    assert not structure.zh_roles_moved("付款后我会收到发票吗？", "我会在付款后收到发票吗？")
    assert decide("我不在的时候邻居能帮我签收吗？", "邻居在我不在的时候能帮我签收吗？", 0.97, 0.6).hit
    # the persons themselves exchanged between the clauses: still moved
    assert structure.zh_roles_moved("房东不在的时候我能进门吗？", "我不在的时候房东能进门吗？")


def test_chinese_operations_and_objects_need_more_than_one_shared_character() -> None:
    # `续签` (renew) and `签合同` (sign) share `签`; `证件` alone is the same topic, not the same question
    assert structure.agree("请问签合同的时候需要带什么证件？", "续签需要带哪些证件？", "zh") is False
    login = ("企业邮箱登录不上怎么办？", "企业邮箱一直登不进去，怎么解决？")
    assert structure.agree(*login, "zh") is True  # 登 heads both
