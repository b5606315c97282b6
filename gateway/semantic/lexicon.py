"""General word lists the second-stage guard uses, in English and Chinese.

Nothing here comes from any evaluation set: these are the function words of each language (after
the classic stop-word lists), its negators, its yes/no question particles, and common antonym pairs.
Words that carry the *difference* between two questions — prepositions of direction and time,
quantifiers of scope, negators — are deliberately *not* stop words.

Tenants add their own exclusive groups (plans, products, regions) through the policy's
`semantic_cache.exclusive_terms`.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from gateway.semantic import lean_tables
from gateway.semantic.compact import SortedStrings
from gateway.semantic.lean_tables import Senses

# Function words (after NLTK's English list) minus negators, direction/time prepositions and
# scope quantifiers, plus greetings, politeness fillers and hedges (`approx`, `roughly`) that never
# change what is asked (numbers are compared on their own); the function verbs inflected (`gets` as
# `get`) and `whenever` / `wherever` as `when` / `where` (`EN_STOP_FORMS`: no misspelling is read as
# one of them, `gest` stays a slip of `guest`).
EN_STOP_FORMS = frozenset("gets gotten needs wants tells told knows whenever wherever".split())  # noqa: SIM905
EN_STOP = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves what which who whom whose this that these those
am is are was were be been being have has had having do does did doing done a an the and but if or
because as while of at by for with about between into through to again then here there when where why
how from in on such so than too very s t can could will would shall should may might must just now also still
really please kindly hi hello hey yo thanks thank dear sir madam ok okay um uh get got getting let lets
tell know want need like way possible able approx approximately roughly
""".split()) | EN_STOP_FORMS  # noqa: SIM905 (a word list reads better as text)

EN_NEGATORS = frozenset("""
not no never none nothing nobody nowhere neither nor without cannot non
""".split())  # noqa: SIM905 (a word list reads better as text)

# Antonym pairs of general English (direction, state, operation, quantity, time). A question that
# says one where the other says its opposite asks something else, however close the vectors are.
EN_ANTONYMS: tuple[tuple[str, str], ...] = (
    ("turn on", "turn off"), ("switch on", "switch off"), ("log in", "log out"), ("sign in", "sign out"),
    ("opt in", "opt out"), ("check in", "check out"), ("up", "down"), ("over", "under"), ("above", "below"),
    ("before", "after"), ("first", "last"), ("early", "late"), ("earlier", "later"),
    ("enable", "disable"), ("enabled", "disabled"), ("activate", "deactivate"), ("open", "close"),
    ("opened", "closed"), ("lock", "unlock"), ("start", "stop"), ("begin", "end"), ("show", "hide"),
    ("import", "export"), ("upload", "download"), ("send", "receive"), ("buy", "sell"),
    ("add", "remove"), ("include", "exclude"), ("install", "uninstall"), ("subscribe", "unsubscribe"),
    ("connect", "disconnect"), ("increase", "decrease"), ("raise", "lower"), ("upgrade", "downgrade"),
    ("maximum", "minimum"), ("max", "min"), ("most", "least"), ("more", "less"), ("higher", "lower"),
    ("high", "low"), ("long", "short"), ("fast", "slow"), ("large", "small"), ("big", "small"),
    ("public", "private"), ("internal", "external"), ("inbound", "outbound"), ("input", "output"),
    ("read", "write"), ("allow", "deny"), ("accept", "reject"), ("approve", "reject"),
    ("encrypt", "decrypt"), ("compress", "decompress"), ("login", "logout"), ("sign in", "sign out"),
    ("online", "offline"), ("pass", "fail"), ("success", "failure"), ("valid", "invalid"),
    ("old", "new"), ("past", "future"), ("yesterday", "tomorrow"), ("last", "next"),
    ("previous", "next"),
    ("temporary", "permanent"), ("temporarily", "permanently"), ("manual", "automatic"),
    ("manually", "automatically"), ("single", "multiple"),
    ("paid", "free"), ("paid", "unpaid"), ("full", "partial"), ("debit", "credit"),
)

# Chinese function words (matched longest-first); question words and particles, pronouns,
# politeness, the conditional conjunctions (`如果 … 怎么办` asks what `… 怎么办` asks; a condition's
# content words still count), `情况下` (`在 … 的情况下`, "in the case of"), a request for help that
# names the speaker (`能帮我取消吗` asks what `能取消吗` asks; `帮我朋友` keeps the friend) and the
# perfective `已经` (as `了`; `已经` / `还没` stays an antonym pair, compared on the text).
# The modals of necessity (`必须`, `一定要`) are function words like `需要`: `modality` compares them.
# Negators and direction words are not here.
ZH_STOP = frozenset("""
怎么样 怎么办 怎么 怎样 如何 什么 为什么 为何 哪里 哪儿 哪个 哪些 哪天 哪 是否 能否 可否 可以 能够
请问 请 麻烦 您好 你好 亲 谢谢 非常 问下 问一下 一下 一般 通常 的话 的 地 得 了 着 过 吗
呢 吧 啊 呀 哦 嘛 啦 哈 呗 我们 你们 他们 我 你 您 他 她 它 咱们 是 在 会 能 要 想
需要 应该 该 还 就 都 也 又 这个 那个 这 那 个 把 被 给 对 和 与 及 或 或者 等 之 其
很 太 么 里 去 来 时候 时 当 然后 多少 几
如果 假如 要是 情况下 帮我 帮我们 帮忙 咱 已经
必须 必需 一定要 非得 务必
""".split())  # noqa: SIM905 (a word list reads better as text)

# Quantifiers of scope: "all my invoices" is not "last month's invoice"; "every key" is not "a key".
EN_SCOPE = frozenset("""
all every each entire whole both single multiple everyone everything everybody bulk batch
""".split())  # noqa: SIM905 (a word list reads better as text)
ZH_SCOPE = ("所有", "全部", "每个", "每一个", "一次性", "批量", "整个", "单个", "全体", "多个")

# Words that give the next term a role (from X to Y, X instead of Y): the same terms in other roles
# ask something else.
EN_FRAME = frozenset("""
from to into than instead versus vs over before after
""".split())  # noqa: SIM905 (a word list reads better as text)
ZH_FRAME = ("从", "改成", "换成", "转成", "变成", "转为", "改为", "比")

ZH_NEGATORS = ("无法", "没有", "没", "不", "未", "非", "无", "别", "勿", "否", "莫")

# "会不会", "能不能", "有没有", "是不是", "可不可以": yes/no questions, not negations.
ZH_A_NOT_A = r"(\w)(?:不|没)\1"

ZH_ANTONYMS: tuple[tuple[str, str], ...] = (
    ("开启", "关闭"), ("打开", "关闭"), ("开通", "关闭"), ("启用", "停用"), ("启用", "禁用"), ("导入", "导出"),
    ("上传", "下载"), ("登录", "退出"), ("登入", "登出"), ("充值", "提现"), ("绑定", "解绑"), ("冻结", "解冻"),
    ("订阅", "退订"), ("加密", "解密"), ("锁定", "解锁"), ("增加", "减少"), ("提高", "降低"), ("升级", "降级"),
    ("最多", "最少"), ("最大", "最小"), ("最高", "最低"), ("之前", "之后"), ("以前", "以后"), ("已经", "还没"),
    ("公开", "私有"), ("内部", "外部"), ("对内", "对外"), ("手动", "自动"),
    ("临时", "永久"), ("全部", "部分"), ("单个", "多个"), ("成功", "失败"), ("允许", "禁止"), ("同意", "拒绝"),
    ("今年", "去年"), ("今年", "明年"), ("本月", "上月"), ("本月", "下月"), ("昨天", "明天"),
    # buy / sell (as in EN_ANTONYMS): one syllable in two tones, which pinyin input and the aligner's
    # homophone step (an input-method slip) would otherwise take for one character
    ("买", "卖"),
)


@lru_cache(maxsize=1)
def wordnet_senses() -> Senses:
    """English lemma → the synsets of its most frequent senses (WordNet 3.0; see WORDNET_LICENSE.txt).
    Two words that share one are synonyms in a common sense (`movie`/`film`, `annual`/`yearly`)."""
    return lean_tables.wordnet_senses()


@lru_cache(maxsize=1)
def english_words() -> SortedStrings:
    """Real English words (to tell a misspelling, which may be matched by spelling, from a word);
    held compact (`in` only, behind the caller's cache)."""
    text = resources.files("gateway.semantic").joinpath("data/en_words.txt").read_text(encoding="utf-8")
    return SortedStrings(w for w in text.split("\n") if w and not w.startswith("#"))


def known_word(word: str) -> bool:
    """A word some dictionary here knows: the word list, WordNet's table, or LemmInflect's noun and verb
    lemmas (`medicaid`, `whey`): what a spelling rule must leave as it is."""
    return word in english_words() or word in wordnet_senses() or bool(lean_tables.noun_verb_lemmas(word))
