"""Rewrites that make two spellings of one question the same text before it is tokenised.

Each rule is general English or Chinese usage, none is a word of any evaluation set, and each is
safe for the same reason: it rewrites a form into the form it abbreviates or frames, so what the
question asks (its operation, objects, numbers, negations and parties) is left as it was. A rule
that could change what is asked is not here: synonyms stay the aligner's business (WordNet), and a
word that is only on one side still counts as a change.

- Informal spellings of a question word with its `is` (`whats`, `hows`, `wheres` …) and of the
  modal contractions (`gotta`, `gonna`, `wanna`): the apostrophe-less forms of `what's`, `have got
  to`, `going to`, `want to`. Only forms that are not themselves English words are rewritten
  (`its`, `lets`, `hes`, `were`, `well` stay).
- A request that frames a question (`could you explain how …`, `can you show me where …`,
  `let me know when …`): the framed question is what is asked, so the frame goes when a question
  word follows it. `explain` followed by an object (`explain my bill`) stays.
- `what are the steps to`, `what is the process for`, `what is the procedure to` ask `how to`;
  `what happens if` asks `what if`; `the hiring process` names `hiring` (a generic head);
- Between two questions (`per_as_article`): a distributive `per X` is `a X` when the other question
  says `a X` (only then: `requests per minute` must stay an acronym's `RPM`);
  `what is the price of` / `what's the cost of` ask `how much is`.
- A closing plea that restates the question (`…, what's wrong?`, `what's going on?`, `what should I
  do?`, `?? help`) goes when the question before it has three words or more: what is asked is
  what comes before it.
- `percent`, `per cent` after a number are `%`; Chinese `百分之N` is `N%` (digits or number words);
  `%` and `percent` with no number before them ask for a `percentage` (`what % fee`).
- `half an hour` is `30 minutes`, `半小时` is `30分钟` (the same duration, said both ways); `3月份`
  is `3月` (`月份`, "month", after a number).
- Chat spellings of function words: `u` / `ur` (you, your), `pls` / `plz` (please), `thx` (thanks),
  `thru` (through), `cuz` / `coz` / `b/c` (because), `abt` (about), `im` (I'm), `w/` (with), `w/o`
  (without: a negation, as the word is).
- A greeting before the question (`Dear support team,`, `Hello,`, `Excuse me,`) and a sign-off after it (`Best
  regards`, `Cheers`, `Please advise`); `asap`; `how would I go about resetting` (= `resetting`), `need
  help resetting` (= `how to reset`), `I'm trying to reset …` (= `reset …`); `is there an option /
  a possibility to` (= `is there a way to`); `would you be able to tell me how`, `any idea how`.
- Courtesy that asks nothing: `quick question:`, `thanks in advance`, `any help is appreciated`,
  `I was wondering if …` (what follows is the question), `is there any way to` (= `is there a way
  to`), and `can you help me V` / `please help me V` (= `how to V`; `help me with X` stays: X is no
  action).
- Comparisons with a number: `above` / `more than` / `greater than` / `in excess of` before a number
  are `over`; `below` / `less than` / `fewer than` / `lower than` are `under` (the number is compared
  on its own; `over` / `under` stay opposites). `twice` / `thrice` are `2 times` / `3 times`.
- `am I allowed / permitted to V` is `can I V` (also `is my son allowed to`), `is it necessary /
  required to V` is `do I need to V`: permission and need said with an adjective; `are X available
  to V` is `can I V X`. In the passive,
  `am I required to V` is `must I V`, `is a card required / needed (to V)` is `do I need a card (to
  V)` and `which documents are required` is `which documents do I need`.
- `unable` / `impossible` are `not able` / `not possible`: the negation of two function words (`able`,
  `possible`, like `can`), so `I'm unable to log in` says `I can't log in`.
- Between two questions (`negated_as_not`): an adjective negated by its prefix is `not` and the
  adjective when the other question says that adjective (`unavailable` / `not available`, `invalid` /
  `not valid`, `unhappy` / `not happy`): only the pairs WordNet joins as antonyms
  (`gateway_dev.wordnet_table --negated`; `invaluable`, `inflammable` and the verbs that undo, `unlock`,
  are not there), and only then, since a prefixed word may have drifted from its base (`incredible`,
  `immediate` say no `not credible`, `not mediate`).
- Amounts and times said in words: `20 dollars` / `20 USD` are `$20`, `20 euros` / `20 EUR` are `€20`
  (`pounds` may weigh, and stays); `2 and a half hours` / `an hour and a half` are `2.5` / `1.5 hours`;
  `a dozen` is 12; `twenty-first` is `21st`; clock times are read on 24 hours (`5pm`, `5 p.m.`,
  `5:00 PM` are `17:00`; `noon` is `12:00`, `midnight` `0:00`).
- Between two questions (`units_as_other`): `2 weeks` is `14 days`, `1 year` `12 months`, `1 day`
  `24 hours`, `1 hour` `60 minutes` when the other question says the second (`a week` counts as 1).
- Between two questions (`ordinals_as_digits`): `second` is `2nd` when the other question says `2nd`.
- Between two questions (`ones_as_articles`): `a month`, `an hour`, `one position` are `1 month`,
  `1 hour`, `1 position` when the other question says `1` before the same word. Only then: a lone
  `a` is an article, not a number, so "how much is it a month" keeps matching "per month".
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from functools import lru_cache
from importlib import resources

_WH_IS = re.compile(r"\b(what|how|where|when|why|who|that|there|here)s\b", re.I)
_MODAL = [(re.compile(r"\bgotta\b", re.I), "have to"), (re.compile(r"\bgonna\b", re.I), "going to"),
          (re.compile(r"\bwanna\b", re.I), "want to")]
_WH = r"(?:how|what|why|where|when|which|who|whether|if)\b"
_REQUEST = re.compile(
    r"\b(?:(?:could|can|would|will)\s+(?:you|someone|anyone)\s+(?:please\s+)?(?:be\s+able\s+to\s+)?"
    r"|is\s+it\s+possible\s+for\s+(?:you|someone|anyone)\s+to\s+)?"
    rf"(?:explain|show\s+me|tell\s+me|let\s+me\s+know)(?:\s+to\s+me)?\s+(?={_WH})"
    rf"|\b(?:any\s+idea|does\s+anyone\s+know|anyone\s+know)\s+(?={_WH})", re.I)
# after contractions: "what's the process for" arrives as "what the process for"
_STEPS = re.compile(r"\bwhat(?:\s+(?:are|is|were|was))?\s+the\s+(?:steps|process|procedure)\s+(?:to|for)\b", re.I)
# `what happens if X` asks `what if X`; `the hiring process` names `hiring` (a generic head after an
# action noun, as Chinese `X功能` after what it names)
_WHAT_HAPPENS = re.compile(r"\bwhat\s+(?:happens|will\s+happen|would\s+happen)\s+(?=if\b)", re.I)
_PROCESS = re.compile(r"\b([a-z]+(?:ing|tion|sion|ment|al))\s+process\b", re.I)
# distributive `per` (`per_as_article`)
_PER = re.compile(r"(?<!\bas\s)\bper\s+(?!cent\b)([a-z]+)", re.I)
# "what is the price of X" asks "how much is X" (after contractions: "what's" arrives as "what")
_PRICE = re.compile(r"\bwhat(?:\s+(?:is|are|was|were))?\s+the\s+(?:price|cost)\b(?:\s+of\b)?", re.I)
# A closing question that only asks for help with what was just said: "My bulb won't connect, what's
# wrong?", "I got charged twice, what's going on?", "… not here?? help". It goes when at least three
# words come before it; a bare `help` only after punctuation (`how do I get help` keeps its object).
_TAIL = re.compile(r"(?<=\w)(?:(?:\s*[,.;:!?-]+\s*|\s+)(?:so\s+)?(?:what(?:\s+is)?\s+(?:wrong|going\s+on|the\s+matter)"
                   r"|what\s+(?:should|do|can|could)\s+(?:i|we)\s+do(?:\s+now)?)"
                   r"|\s*[,.;:!?-]+\s*(?:please\s+|pls\s+)?help(?:\s+(?:me|please|pls))?)\s*[?.!]*\s*$", re.I)
_HALF_HOUR = re.compile(r"\bhalf(?:\s+an|\s*-)?\s*hour\b", re.I)
_ZH_HALF_HOUR = re.compile("半个?(?:小时|钟头)")
_ZH_MONTH = re.compile(r"(?<=[\d零〇一二两三四五六七八九十])(\s*)月份")  # `3月份` is `3月` (month 3)
_PERCENT = re.compile(r"(?<=\d)\s*(?:percent|per\s+cent)\b", re.I)
_ZH_PERCENT = re.compile(r"百分之([零〇一二两三四五六七八九十百千]+|\d+(?:\.\d+)?)")


# Courtesy around a question (`quick question:` only before punctuation: "a quick question about X" keeps X)
_COURTESY = re.compile(
    r"\b(?:just\s+)?(?:a\s+)?quick\s+question\s*[:,.!?;–—-]+\s*"
    r"|\b(?:thanks|thank\s+you)(?:\s+(?:so|very)\s+much)?\s+in\s+advance\b[.!]*"
    r"|\bany\s+help\s+(?:would\s+be|will\s+be|is)\s+(?:greatly\s+|much\s+|really\s+)?appreciated\b[.!]*"
    rf"|\bi\s+(?:was|am)\s+(?:just\s+)?wondering\s+(?={_WH})", re.I)
_ANY_WAY = re.compile(r"\bis\s+there\s+(?:any|an?)\s+(?:way|option|possibility)\b", re.I)
# a greeting before the question and a sign-off after it: `Dear support team, …`, `… Best regards`
# (`Hello team,`: up to two words that are no person of the question: `Hi, my manager …` keeps `my manager`)
_GREETING = re.compile(r"^\s*(?:dear|hello|hi|hey|excuse\s+me|good\s+(?:morning|afternoon|evening))"
                       r"(?:\s+(?!(?:my|i|we|our|your|me|us)\b)[a-z]+){0,2}\s*[,!:]\s*", re.I)
# (a name may follow: `Best regards, Ana`; anything longer stays)
_SIGN_OFF = re.compile(r"(?<=[.?!,])\s*(?:(?:best|kind|warm)\s+regards|regards|cheers|many\s+thanks|thanks|thank\s+you"
                       r"|(?:please|kindly)\s+advise)\b(?:[\s,.!]+[a-z]+){0,2}[\s.!]*$", re.I)
_URGENT = re.compile(r"\b(?:asap|as\s+soon\s+as\s+possible)\b", re.I)
# `how would I go about resetting …` / `need help resetting …` / `I'm trying to reset …`: the action is asked
_GO_ABOUT = re.compile(r"\bgo\s+about\s+(?=\w+ing\b)", re.I)
_NEED_HELP = re.compile(r"\b(?:i\s+)?need\s+(?:some\s+)?help\s+(?:with\s+)?(?=\w+ing\b)", re.I)
_TRYING = re.compile(r"\b(?:(?:i|we)\s+(?:am|are|was|were|have\s+been)\s+|i\s+)?trying\s+to\s+(?=[a-z])", re.I)
# "can you help me reset …" asks how to reset; "help me with my bill" names no action and stays
_HELP_ME = re.compile(r"\b(?:(?:can|could|would|will)\s+(?:you|someone|anyone)\s+(?:please\s+)?|please\s+)"
                      r"help\s+me\s+(?:to\s+)?(?=[a-z])(?!with\b|out\b|please\b|pls\b)", re.I)
_NUM_AHEAD = r"(?=[$€£¥]?\s?\d)"
_MORE_THAN = re.compile(rf"\b(?:above|more\s+than|greater\s+than|in\s+excess\s+of)\s+{_NUM_AHEAD}", re.I)
_LESS_THAN = re.compile(rf"\b(?:below|less\s+than|fewer\s+than|lower\s+than)\s+{_NUM_AHEAD}", re.I)
_TIMES = re.compile(r"\b(twice|thrice)\b", re.I)
_DOLLARS = re.compile(r"(?<![\w.$])(\d+(?:\.\d+)?)\s*(?:us\s+)?(?:dollars?|usd|bucks)\b|\busd\s*(?=\d)", re.I)
_EUROS = re.compile(r"(?<![\w.€])(\d+(?:\.\d+)?)\s*(?:euros?|eur)\b|\beur\s*(?=\d)", re.I)
_AND_A_HALF = re.compile(r"\b(\d+|one)\s+and\s+a\s+half\b", re.I)
_HOUR_AND_A_HALF = re.compile(r"\b(?:an?|one)\s+(hour|day|week|month|year)\s+and\s+a\s+half\b", re.I)
_DOZEN = re.compile(r"\b(half\s+)?a\s+dozen\b", re.I)
_ORDINAL_TENS = re.compile(r"\b([2-9]0)[\s-]+(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)\b", re.I)
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s?m\b\.?", re.I)
_NOON = re.compile(r"\b(noon|midday|midnight)\b", re.I)
# permission and need said with an adjective: `am I allowed to V` asks `can I V`, `is it necessary to V`
# asks `do I need to V` (the modality stays what it was: `modality` in the guard compares it)
_ALLOWED_TO = re.compile(r"\b(?:am|is|are)\s+((?:i|we|you|he|she|they|(?:my|our|your|his|her|their|the)\s+[a-z]+)\s+)"
                         r"(?:allowed|permitted)\s+to\b", re.I)
_NECESSARY_TO = re.compile(r"\bis\s+it\s+(?:necessary|required|mandatory|compulsory)\s+(?:for\s+me\s+)?to\b", re.I)
# the same said in the passive: `am I required to V` asks `must I V`; `is a card required (to V)`, `which
# documents are needed` ask `do I need a card`, `which documents do I need` (a person required is no thing)
_PERSON = r"(?:i|we|you|he|she|they|(?:my|our|your|his|her|their|the)\s+[a-z]+)"
_REQUIRED_TO = re.compile(rf"\b(?:am|is|are)\s+({_PERSON})\s+(?:required|obliged|obligated)\s+to\b", re.I)
_NEED_WORD = r"(?:required|needed|necessary|mandatory|compulsory)\b"
_THING_NEEDED = re.compile(r"\b(?:is|are)\s+(?!(?:i|we|you|he|she|they|it|this|that|there)\b)"
                           rf"((?:(?:a|an|the|my|our|your|any|some)\s+)?(?:[a-z]+\s+){{0,2}}?[a-z]+)\s+{_NEED_WORD}",
                           re.I)
_WHICH_NEEDED = re.compile(rf"\b(what|which)\s+((?:[a-z]+\s+){{0,2}}?[a-z]+)\s+(?:is|are)\s+{_NEED_WORD}", re.I)
_NOT_ABLE = re.compile(r"\b(?:un(able)|im(possible))\b", re.I)
# `are skis available to rent` asks `can I rent skis` (availability for an action is its possibility)
_AVAILABLE_TO = re.compile(r"\b(?:is|are)\s+((?:(?:a|an|the|my|our|your|any|some)\s+)?(?:[a-z]+\s+){0,3}?[a-z]+)\s+"
                           r"available\s+to\s+(?!(?:other|all|any|the|a|an|my|your|our|their|his|her|me|us|them|you"
                           r"|everyone|anyone|members|guests|users|customers)\b)([a-z]+)\b", re.I)
# `what %` (no number before it) and `what percent` ask for a percentage
_BARE_PERCENT = re.compile(r"(?<![\d.])\s*%|\bpercent\b", re.I)
# an adjective negated by its prefix (`unavailable`, `invalid`) and WordNet's antonym of it (`negated_as_not`)
_PREFIXED = re.compile(r"\b(?:un|in|im|il|ir|dis|non)-?[a-z]{4,}\b", re.I)


_CHAT = [(re.compile(p), r) for p, r in (
    (r"\bw/o(?![\w/])", "without"), (r"\bw/(?=\s)", "with"), (r"\bb/c\b", "because"),
    (r"\bu\b", "you"), (r"\bur\b", "your"), (r"\b(?:pls|plz)\b", "please"), (r"\b(?:thx|thanx)\b", "thanks"),
    (r"\bthru\b", "through"), (r"\b(?:cuz|coz)\b", "because"), (r"\babt\b", "about"), (r"\bim\b", "i"))]


def english(text: str) -> str:
    """The informal, framing and percent rewrites (run after contractions are expanded)."""
    for pattern, repl in _CHAT:  # lower-case forms only: `U` may be a plan's or a letter's name
        text = pattern.sub(repl, text)
    text = _WH_IS.sub(r"\1", text)
    for pattern, repl in _MODAL:
        text = pattern.sub(repl, text)
    text = _GREETING.sub("", text)
    text = _SIGN_OFF.sub("", text)
    text = _COURTESY.sub(" ", text)
    text = _URGENT.sub(" ", text)
    text = _GO_ABOUT.sub("", text)
    text = _NEED_HELP.sub("how to ", text)
    text = _TRYING.sub("", text)
    text = _ANY_WAY.sub("is there a way", text)
    text = _HELP_ME.sub("how to ", text)
    text = _REQUEST.sub("", text)
    text = _STEPS.sub("how to", text)
    text = _WHAT_HAPPENS.sub("what ", text)
    text = _PROCESS.sub(r"\1", text)
    text = _PRICE.sub("how much is", text)
    tail = _TAIL.search(text)
    if tail and len(re.findall(r"[A-Za-z0-9]+", text[: tail.start()])) >= 3:
        text = text[: tail.start()]
    text = _HALF_HOUR.sub("30 minutes", text)
    text = _MORE_THAN.sub("over ", text)
    text = _LESS_THAN.sub("under ", text)
    text = _DOLLARS.sub(lambda m: f"${m.group(1)}" if m.group(1) else "$", text)
    text = _EUROS.sub(lambda m: f"€{m.group(1)}" if m.group(1) else "€", text)
    text = _HOUR_AND_A_HALF.sub(r"1.5 \1s", text)
    text = _AND_A_HALF.sub(lambda m: f"{1 if m.group(1).lower() == 'one' else m.group(1)}.5", text)
    text = _DOZEN.sub(lambda m: "6" if m.group(1) else "12", text)
    text = _ORDINAL_TENS.sub(lambda m: f"{int(m.group(1)) + _ORDINAL_WORDS[m.group(2).lower()]}th", text)
    text = _CLOCK.sub(_clock, text)
    text = _NOON.sub(lambda m: "0:00" if m.group(1).lower() == "midnight" else "12:00", text)
    text = _ALLOWED_TO.sub(r"can \1", text)
    text = _NECESSARY_TO.sub("do i need to", text)
    text = _REQUIRED_TO.sub(r"must \1", text)
    text = _WHICH_NEEDED.sub(r"\1 \2 do i need", text)
    text = _THING_NEEDED.sub(r"do i need \1", text)
    text = _NOT_ABLE.sub(lambda m: f"not {m.group(1) or m.group(2)}", text)
    text = _AVAILABLE_TO.sub(r"can i \2 \1", text)
    text = _TIMES.sub(lambda m: "2 times" if m.group(1).lower() == "twice" else "3 times", text)
    text = _PERCENT.sub("%", text)
    return _BARE_PERCENT.sub(" percentage", text) if "%" in text or "ercent" in text else text


def negated_as_not(a: str, b: str) -> tuple[str, str]:
    """`unavailable` on one side is `not available` when the other side says `available`."""
    def rewrite(other: str, text: str) -> str:
        if not _PREFIXED.search(text):
            return text
        negated, said = _negated_adjectives(), set(re.findall(r"[a-z]+", other.lower()))

        def one(m: re.Match[str]) -> str:
            base = negated.get(m.group(0).lower().replace("-", ""))
            return f"not {base}" if base in said else m.group(0)

        return _PREFIXED.sub(one, text)

    return rewrite(b, a), rewrite(a, b)


@lru_cache(maxsize=1)
def _negated_adjectives() -> dict[str, str]:
    raw = resources.files("gateway.semantic").joinpath("data/wordnet_negated.tsv.gz").read_bytes()
    return dict(line.split("\t", 1) for line in gzip.decompress(raw).decode("utf-8").splitlines() if line)


def chinese_quantities(text: str, parse: Callable[[str], int | None]) -> str:
    """`百分之五` / `百分之5` → `5%` (before Chinese number words become digits: `百` is one of them);
    `半小时` → `30分钟`; `3月份` → `3月`."""
    text = _ZH_HALF_HOUR.sub("30分钟", text)
    text = _ZH_MONTH.sub(r"\1月", text)
    if "百分之" not in text:
        return text

    def repl(m: re.Match[str]) -> str:
        run = m.group(1)
        value = run if run[0].isdigit() else parse(run)
        return f"{value}%"

    return _ZH_PERCENT.sub(repl, text)


_ONE_BEFORE = re.compile(r"(?<![\d.])\b1(?:\s+|-)([A-Za-z]+)")
_ARTICLE = re.compile(r"\b(?:a|an|one)(?:\s+|-)(?!one\b)([A-Za-z]+)", re.I)


# a number standing alone at the end of its phrase (`instead of 1`, `more than one?`)
_LONE_1 = re.compile(r"\b([A-Za-z]+)\s+1(?![\d.]|\s*[A-Za-z])")
_LONE_ONE = re.compile(r"\b([A-Za-z]+)\s+one\b(?!\s*[A-Za-z])", re.I)


def per_as_article(a: str, b: str) -> tuple[str, str]:
    """`2 bags per month` on one side is `2 bags a month` when the other side says `a month`."""
    def rewrite(other: str, text: str) -> str:
        said = {w.lower() for w in re.findall(r"\ban?\s+([a-z]+)", other, re.I)}
        return _PER.sub(lambda m: f"a {m.group(1)}" if m.group(1).lower() in said else m.group(0), text)

    return rewrite(b, a), rewrite(a, b)


def ones_as_articles(a: str, b: str, stem: Callable[[str], str]) -> tuple[str, str]:
    """`a month` / `one month` on one side is `1 month` when the other side says `1 month`
    (`months`, by stem): the same quantity, written with an article or a number word. So is a lone
    `one` ending its phrase after the word the other side's lone `1` follows (`instead of one` /
    `instead of 1`)."""
    def rewrite(digits: str, words: str) -> str:
        counted = {stem(m.group(1).lower()) for m in _ONE_BEFORE.finditer(digits)}
        after = {m.group(1).lower() for m in _LONE_1.finditer(digits)}

        def one(w: re.Match[str]) -> str:
            return f"1 {w.group(1)}" if stem(w.group(1).lower()) in counted else w.group(0)

        if after:
            words = _LONE_ONE.sub(lambda w: f"{w.group(1)} 1" if w.group(1).lower() in after else w.group(0), words)
        return _ARTICLE.sub(one, words) if counted else words

    return rewrite(b, a), rewrite(a, b)


_ORDINAL_WORDS = {w: n for n, w in enumerate((
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
    "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth",
    "twentieth"), 1)}
_DIGIT_ORDINAL = re.compile(r"(?<![\d.])\b(\d+)(?:st|nd|rd|th)\b", re.I)
_ORDINAL_WORD = re.compile(r"\b(" + "|".join(_ORDINAL_WORDS) + r")\b", re.I)


def ordinals_as_digits(a: str, b: str) -> tuple[str, str]:
    """`the second bag` is `the 2nd bag` when the other question says `2nd`: the same ordinal in words
    and in digits. Only then (`second` alone may be a unit of time, `first` an adverb)."""
    def rewrite(digits: str, words: str) -> str:
        said = {int(m.group(1)) for m in _DIGIT_ORDINAL.finditer(digits)}
        if not said:
            return words

        def one(m: re.Match[str]) -> str:
            n = _ORDINAL_WORDS[m.group(1).lower()]
            return f"{n}{'st' if n == 1 else 'nd' if n == 2 else 'rd' if n == 3 else 'th'}" if n in said else m.group(0)

        return _ORDINAL_WORD.sub(one, words)

    return rewrite(b, a), rewrite(a, b)


def _clock(m: re.Match[str]) -> str:
    hour, minutes = int(m.group(1)), m.group(2) or "00"
    if hour > 12:
        return m.group(0)  # `13 pm` is no time this reading knows
    if m.group(3).lower() == "p" and hour < 12:
        hour += 12
    elif m.group(3).lower() == "a" and hour == 12:
        hour = 0
    return f"{hour}:{minutes}"


# (larger unit, smaller unit, how many of the smaller make one larger)
_UNITS = (("week", "day", 7), ("year", "month", 12), ("day", "hour", 24), ("hour", "minute", 60))
_COUNTED = re.compile(r"(?<![\d.])\b(\d+(?:\.\d+)?|an?|one)(\s+|-)(week|year|month|day|hour|minute)s?\b", re.I)


def units_as_other(a: str, b: str) -> tuple[str, str]:
    """`2 weeks` on one side is `14 days` when the other side says `14 days` (and `a year` is `12
    months` when the other says 12 months): one duration in two units. Only then: a lone `a week`
    stays what it says."""
    def amounts(text: str) -> set[tuple[float, str]]:
        return {(_count(m.group(1)), m.group(3).lower()) for m in _COUNTED.finditer(text)}

    def rewrite(other: str, text: str) -> str:
        said = amounts(other)
        if not said:
            return text

        def one(m: re.Match[str]) -> str:
            n, unit = _count(m.group(1)), m.group(3).lower()
            for big, small, k in _UNITS:
                if unit == big and (n * k, small) in said:
                    value = n * k
                    return f"{int(value) if value == int(value) else value} {small}s"
            return m.group(0)

        return _COUNTED.sub(one, text)

    return rewrite(b, a), rewrite(a, b)


def _count(word: str) -> float:
    return 1.0 if word.lower() in ("a", "an", "one") else float(word)
