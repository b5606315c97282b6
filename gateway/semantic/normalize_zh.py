"""Chinese rewrites that make two spellings of one question the same text before it is tokenised.

The Chinese counterpart of `gateway.semantic.normalize`: each rule is general Chinese usage (a
colloquial form and the standard one, a question frame and the question word it stands for, a
formal time word and the everyday one), none is a word of any evaluation set, and each rewrites a
form into the one it means, so what is asked (operation, objects, numbers, negation, parties) is
left as it was. Synonyms of content words are not here: no shippable Chinese thesaurus links them
safely, and a content word on one side only still counts as a change.

- Colloquial question words: `啥` is `什么` (`为啥` `为什么`), `咋` is `怎么` (`咋办`, `咋样`).
- Question phrases that stand for one question word: `多长时间` / `多少时间` = `多久` (how long),
  `何时` / `几时` = `什么时候` (when), `什么地方` / `哪个地方` / `哪些地方` / `何处` = `哪里` (where),
  `是什么原因` / `原因是什么` / `怎么回事` = `为什么` (why), `有(什么)办法` = `能` (can one …),
  `怎么才能` = `怎么` (how), `什么样的` = `什么`, `价格是多少` / `价钱是多少` = `多少钱` (how much).
- A request that frames a question (`我想知道` / `想了解一下` / `请告诉我` + a question word): the frame goes.
- A closing `怎么处理` / `如何解决` / `怎么弄` / `怎么搞` after a stated problem (a comma or `了`
  before it, nothing after it) asks `怎么办` (what to do): `发票丢了，如何处理？` = `发票丢了怎么办？`.
  With an object after it, or no problem before it (`退款怎么处理`: how refunds are handled), the
  verb stays. A closing plea after a punctuated question (`…？在线等，急`, `…，求助`) goes.
- Negated modals: `没办法` / `没有办法` / `没法` / `无法` are one negator, as `不能` is `不` + a modal.
- Everyday forms of the same function word: `老是` / `总是` = `一直` (keeps …ing), `以前` / `以后` /
  `以内` = `之前` / `之后` / `之内` (`之` is a function word, so `三天前` = `三天之前`), the formal day
  words `今日` / `明日` / `昨日` / `当日` = `今天` / `明天` / `昨天` / `当天`, `星期` / `礼拜` before a
  weekday = `周`, `周天` = `周日`, `忘记` = `忘`, the light verb `弄` before its result (`弄丢` = `丢`),
  the formal pronouns
  `我司` / `贵司` = `我们` / `你们`, `重新` = the prefix `重` (`重新开` = `重开`).
- Formal light verbs before the word that carries the meaning (`进行` / `办理` / `出现` + X = X:
  `如何办理挂失` = `怎么挂失`) and a generic head after what it names (`X功能`, `X业务` = X).
- Quantities: `块钱` / `元钱` after a number = `元`, `俩` = `两个`, `半年` = `6个月`, times of day
  (`4:30` / `四点半` = `4点30分`, `9:00` = `9点`), digits before a unit numeral as one number
  (`3万` = `30000`, `2.5千` = `2500`).
- `每个月` / `每个人` / `每个小时` = `每月` / `每人` / `每小时`.
- Event order: `A之后再B` and `B之前先A` are `先A再B` (`先A后B` too), so the placement rule compares
  one order (`B之前先A` / `先B再A` still exchange A and B).
- Between two questions (`kuai_as_yuan`): `49块` is `49元` when the other question writes `49元`.
- Between two questions (`ones_as_digits`): a lone `一` is `1` when the other question writes `1` in
  the same place (before the same measure word, or after `第`): `满一年` / `满1年`. Only then: a lone
  `一` is mostly "a" (`一个`, `一下`), which must keep matching a question that says no number.
"""

from __future__ import annotations

import re

_HAN = "\u3400-\u4dbf\u4e00-\u9fff"
_NUMERAL = "\\d零〇一二两三四五六七八九十百千万亿"
_ENDS = "(?=[?？。.!！~～]*$)"
_QUESTION = "怎么|如何|怎样|什么|为什么|为何|哪|多少|多久|几|是否|能否|可否|有没有|能不能|可不可以|会不会|是不是|要不要"
_ASKS = f"(?=[^，,。？?！!]*(?:{_QUESTION}))"  # a question word later in the same clause
_REWRITES: list[tuple[re.Pattern[str], str]] = [(re.compile(p), r) for p, r in (
    # a closing "how to deal with it" after a stated problem asks what to do
    (f"(?<=[了，,；;])(?:请问)?(?:我)?(?:该|要|应该|需要)?(?:怎么|如何|怎样|咋)(?:处理|解决|弄|搞)(?:呢|啊|呀)?{_ENDS}",
     "怎么办"),
    ("为啥", "为什么"), ("啥", "什么"), ("咋", "怎么"),
    # a request that frames a question (`我想知道怎么…`, `请告诉我如何…`): the framed question is what is
    # asked, so the frame goes when a question word follows it (`我想了解会员权益` keeps its object)
    (f"(?:我)?(?:想|想要|希望)?(?:知道|了解|咨询|请教|问问)(?:一下|下)?[，,:：]?{_ASKS}", ""),
    (f"(?:请|麻烦|能|可以)?(?:你)?告诉我(?:一下|下)?[，,:：]?{_ASKS}", ""),
    ("什么样(?:的)?", "什么"), ("多长(?:的)?时间|多少时间", "多久"), ("(?<!如)何时|几时", "什么时候"),
    ("什么地方|哪个地方|哪些地方|(?<!如)何处", "哪里"),
    ("(?:这个?)?(?:是)?什么原因|原因是什么|(?:这个?)?(?:是)?怎么回事", "为什么"),
    ("(?<![没])有(?:什么)?(?:办法|方法)", "能"), ("(怎么|如何|怎样)(?:才能|才可以)", r"\1能"),
    ("(?:的)?(?:价格|价钱)(?:是)?多少(?:钱)?", "多少钱"),
    ("没(?:有)?办法|没法", "无法"),
    ("老是|总是", "一直"), ("(?<![可所足难予加得用借给])以(前|后|内)", r"之\1"),
    ("今日", "今天"), ("明日", "明天"), ("昨日", "昨天"), ("当日", "当天"),
    ("(?:星期|礼拜)(?=[一二三四五六日天1-6])", "周"), ("周天", "周日"),
    ("忘记", "忘"), ("弄(?=[丢坏错脏湿破断掉乱])", ""),
    (f"(?<=[{_NUMERAL}])\\s*(?:块钱|元钱)", "元"), ("俩", "两个"), ("半年", "6个月"),
    # `每个月` / `每个人` = `每月` / `每人` (the classifier said or not: one quantifier)
    ("每个(?=月|人|小时|星期|礼拜|周|季度)", "每"),
    # times of day: `4:30` / `四点半` = `4点30分`, `4:00` = `4点`
    (r"(?<![\d.])(\d{1,2})[:：]00(?!\d)", r"\1点"), (r"(?<![\d.])(\d{1,2})[:：](\d{2})(?!\d)", r"\1点\2分"),
    ("点半", "点30分"),
    # formal pronouns and the long form of the prefix `重` (again): `我司` = `我们`, `重新开` = `重开`
    ("我司", "我们"), ("贵司", "你们"), ("重新", "重"),
    # a closing plea after the question (`…，在线等，急`, `…？求助`): what is asked comes before it
    ("(?<=\\S{3})(?:[，,。！!？?\\s]+(?:在线等|急急急|急|求助|求解答|求解|求大神|谢谢|多谢))+[！!。？?～~]*$",
     ""),
    # formal light verbs before the verb or noun that carries the meaning: `如何办理退货` = `怎么退货`
    (f"(?:进行|办理|出现)(?=[{_HAN}])", ""),
    # a generic head after what it names: `漫游业务` = `漫游`, `自动续费功能` = `自动续费`
    (f"(?<=[{_HAN}])(?:功能|业务)(?![员费部量])", ""),
)]


_UNIT_VALUE = {"百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
_DIGITS_UNIT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([百千万亿]+)(?![\d零〇一二两三四五六七八九十])")


def _digits_times_unit(m: re.Match[str]) -> str:
    value = float(m.group(1))
    for ch in m.group(2):
        value *= _UNIT_VALUE[ch]
    return str(int(value)) if value == int(value) else str(value)


# Event order said three ways: `先A再B` (first A, then B), `A之后再B` (after A, B) and `B之前先A` (before B,
# first A); `先A后B` is `先A再B`. All become `先A再B`, so the placement rule compares one order: `B之前先A`
# and `先B再A` still exchange A and B. A and B are stretches of one clause.
_CLAUSE = "[^，,。；;！!？?\\s]"
_BEFORE_FIRST = re.compile(f"(^|[，,。；;！!？?\\s])({_CLAUSE}{{1,15}}?)之前((?:要|得|需要|应该|必须)?)(?:先|就)"
                           f"({_CLAUSE}{{1,15}}?)(?=可以|能|吗|呢|吧|好|行|[，,。；;！!？?\\s]|$)")
_AFTER_THEN = re.compile("(^|[，,。；;！!？?\\s])([^，,。；;！!？?\\s先]{1,15}?)之后(?:再|才)")
_FIRST_AFTER = re.compile(f"先({_CLAUSE}{{1,12}}?)(?<!之)后(?=[{_HAN}])")


def _event_order(text: str) -> str:
    if "先" not in text and "之后" not in text and "之前" not in text:
        return text
    text = _BEFORE_FIRST.sub(r"\1\3先\4再\2", text)
    text = _AFTER_THEN.sub(r"\1先\2再", text)
    return _FIRST_AFTER.sub(r"先\1再", text)


def chinese(text: str) -> str:
    """The Chinese rewrites above (run on NFKC text, before number words become digits), and digits
    before a unit numeral as one number (`3万` = `30000`, `2.5千` = `2500`; `3万5` stays as written)."""
    for pattern, repl in _REWRITES:
        text = pattern.sub(repl, text)
    return _DIGITS_UNIT.sub(_digits_times_unit, _event_order(text))


_MEASURE_CHARS = ("个天日号月年周次台张件份位名人元块岁点条本页项种笔单晚层期篇倍"
                  "辆架只双对套盒瓶杯把支颗片包袋箱间座家节课场趟遍")
_ONE_CONTEXT = re.compile(f"(?<![{_NUMERAL}.])(第?)1\\s*([{_MEASURE_CHARS}]?)")
_LONE_ONE = re.compile(f"(?<![{_NUMERAL}.])(第?)一(?![{_NUMERAL}])([{_MEASURE_CHARS}]?)")


# (`块` that no noun follows: `49块免费吗`, `49块吗`, not `2块蛋糕`)
_KUAI = re.compile(r"(\d+(?:\.\d+)?)\s*块(?=$|[^\u3400-\u9fff]|[吗的了吧呢啊免以左多就能可够起包])")


def kuai_as_yuan(a: str, b: str) -> tuple[str, str]:
    """`49块` on one side is `49元` when the other side writes `49元`: the everyday word for the
    currency unit. Only then, and with no noun after it: `块` also counts pieces (`两块蛋糕`)."""

    def rewrite(other: str, text: str) -> str:
        said = set(re.findall(r"(\d+(?:\.\d+)?)\s*元", other))
        return _KUAI.sub(lambda m: f"{m.group(1)}元" if m.group(1) in said else m.group(0), text) if said else text

    return rewrite(b, a), rewrite(a, b)


def ones_as_digits(a: str, b: str) -> tuple[str, str]:
    """`一年` on one side is `1年` when the other side writes `1年` (`第一` when it writes `第1`)."""

    def rewrite(digits: str, words: str) -> str:
        contexts = {(m.group(1), m.group(2)) for m in _ONE_CONTEXT.finditer(digits)}
        contexts = {c for c in contexts if c[0] or c[1]}  # a bare 1 says nothing about a lone 一

        def one(m: re.Match[str]) -> str:
            return f"{m.group(1)}1{m.group(2)}" if (m.group(1), m.group(2)) in contexts else m.group(0)

        return _LONE_ONE.sub(one, words) if contexts else words

    return rewrite(b, a), rewrite(a, b)
