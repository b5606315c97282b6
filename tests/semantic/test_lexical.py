"""Token analysis: numbers in both languages, contractions, names, negators, function words."""

from __future__ import annotations

import pytest

from gateway.semantic.align import align, damerau1, homophones, same_word
from gateway.semantic.lexical import Token, analyze, parse_cn_number, stem


@pytest.mark.parametrize(("text", "numbers"), [
    ("Orders over $1,000 ship free", ("1000",)),
    ("Price per 2K tokens", ("2000",)),
    ("after twenty-five days and three hours", ("25", "3")),
    ("Upgrade from v0.28 to v1", ("0.28", "1")),
    ("HTTP 404 on /v2/items", ("2", "404")),
    ("二〇二五年双十一满三百元", ("11", "2025", "300")),
    ("一个账号能登几台设备", ()),  # 一 alone means "a"
    ("Is one enough?", ()),  # a lone "one" is mostly a pronoun
])
def test_numbers(text: str, numbers: tuple[str, ...]) -> None:
    assert analyze(text).numbers == tuple(sorted(numbers))


@pytest.mark.parametrize(("run", "value"), [("三", 3), ("十", 10), ("十五", 15), ("二十", 20), ("一百零五", 105),
                                            ("三千", 3000), ("一万二千", 12000), ("二〇二四", 2024)])
def test_chinese_numerals(run: str, value: int) -> None:
    assert parse_cn_number(run) == value


def test_contractions_negators_and_a_not_a() -> None:
    assert analyze("I can't log in and it doesn't work").negations == 2
    assert analyze("its not here, doesnt help").negations == 2
    assert analyze("会不会被删？能不能退？").negations == 0
    assert analyze("不能退款吗").negations == 1


def test_names_and_function_words() -> None:
    toks = {t.raw: t for t in analyze("How do I connect the GlobalProtect client on macOS with Python?").tokens}
    assert toks["how"].stop and toks["do"].stop and not toks["connect"].stop
    assert toks["globalprotect"].entity and toks["macos"].entity and toks["python"].entity
    assert not toks["connect"].entity and not toks["how"].entity  # sentence-initial capital is no name
    zh = analyze("怎么在 Mac 上安装 Office？")
    assert [t.raw for t in zh.tokens if t.entity] == ["mac", "office"]


def test_stemming_keeps_word_families_together() -> None:
    assert stem("refunds") == stem("refunded") == stem("refund")
    assert stem("caching") == stem("cached") == stem("cache")
    assert stem("disable") != stem("dis")


def test_spelling_variants() -> None:
    def tok(w: str) -> Token:
        return analyze(w).tokens[0]

    assert same_word(tok("calender"), tok("calendar"))  # misspelt
    assert same_word(tok("config"), tok("configuration"))  # clipped
    assert same_word(tok("VNP"), tok("VPN"))  # two letters swapped
    assert not same_word(tok("sales"), tok("scales"))  # two real words
    assert same_word(tok("apointmnet"), tok("appointment"))  # two slips in a long word
    assert not same_word(tok("dialysis"), tok("analysis"))  # two edits between two words the lexicon knows
    assert not same_word(tok("SMS"), tok("SMB"))
    assert damerau1("abcd", "abdc") == 1
    assert homophones("帐", "账") and not homophones("年", "病")


def test_alignment_counts_changed_places() -> None:
    one = align(analyze("How do I archive a project in the web app?"),
                analyze("How do I rename a project in the web app?"))
    assert [t.text for t in one.unmatched_a] == ["archiv"] and one.changed_blocks == 1 and one.ratio > 0.8
    acronym = align(analyze("What is the requests per minute limit?"), analyze("What is the RPM limit?"))
    assert not acronym.unmatched_a and not acronym.unmatched_b


def test_a_mistyped_function_word_is_that_function_word() -> None:
    # `怎么办` typed `怎么半` (bàn / bàn): the tokenizer splits it into `怎么` and a content character
    slip = align(analyze("打印机卡纸了怎么办？"), analyze("打印机卡纸了怎么半？"))
    assert not slip.unmatched_a and not slip.unmatched_b
    # a content character that does not sound the same stays a change
    other = align(analyze("打印机卡纸了怎么办？"), analyze("打印机卡纸了怎么修？"))
    assert [t.text for t in other.unmatched_b] == ["修"]


def test_months_counted_are_not_a_month_named() -> None:
    # 3个月 is three months, 3月 March; 几个月 how many months, 几月 which month
    from gateway.semantic import guard

    assert not guard.decide("3月的账单什么时候出？", "3个月的账单什么时候出？", 0.99, 0.6).hit
    assert not guard.decide("一月可以退款吗？", "一个月可以退款吗？", 0.99, 0.6).hit
    assert not guard.decide("几个月能到？", "几月能到？", 0.99, 0.6).hit
    assert guard.decide("三个月能退款吗？", "3个月能退款吗？", 0.99, 0.6).hit  # the same count, two spellings
    assert "个月" not in [t.text for t in analyze("这个月的账单").tokens]  # not after a number
