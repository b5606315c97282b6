"""Turns a question into typed tokens the guard can compare: words, numbers, Chinese characters.

The analysis is deliberately shallow and general (no dictionary of any domain): Unicode NFKC,
English contractions, the rewrites of `gateway.semantic.normalize` (informal spellings, request
frames, percent and half-hour quantities), Chinese and English number words to digits,
`1,000`/`1K` to `1000`, identifiers split on `_`/`-` and at letter/digit boundaries (`v0.28` →
`v`, `0.28`; `Win10` → `win`, `10`), a light English stemmer, and greedy longest-match of Chinese
function words, leaving other Chinese characters as one token each (so no segmenter is needed and
a changed character is always visible); after a number `个月` (a count of months) is one token, so
`3个月` is not `3月` (March).

Each token carries flags: a function word (`stop`), a negator (`neg`), a name-like token (`entity`:
digits, ALL CAPS, camelCase, capitalised inside a sentence, an identifier, or Latin text inside
Chinese) and whether it is a number.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from gateway.semantic import normalize, normalize_zh
from gateway.semantic.lexicon import EN_NEGATORS, EN_STOP, EN_STOP_FORMS, ZH_A_NOT_A, ZH_NEGATORS, ZH_STOP, known_word

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_RE = re.compile(f"[{HAN}]")

_CN_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNIT = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
_CN_NUM_RE = re.compile("[零〇一二两三四五六七八九十百千万亿]+")
_CN_APPROX = re.compile("([一二两三四五六七八])([二三四五六七八九])([十百千万亿]?)")
# Measure words and units after which a lone Chinese numeral is a quantity, not a word part.
# classifiers after a number (`两辆车` is two cars: `两` is a number before any of them)
_CN_MEASURE = set("个天日号月年周小时分秒次台张件份位名人元块角倍岁点线级层期篇条本页项种批笔单晚折成%"
                  "辆架只头匹双对套盒瓶杯碗把支枚颗片包袋箱间座栋棵家所门节课场趟遍段句")

_EN_NUM = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
_EN_SCALE = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}

_CONTRACTIONS = [
    (re.compile(r"\b(can)['’]t\b", re.I), r"\1 not"), (re.compile(r"\bwon['’]t\b", re.I), "will not"),
    (re.compile(r"n['’]t\b", re.I), " not"), (re.compile(r"['’](re|ve|ll|d|m)\b", re.I), ""),
    (re.compile(r"['’]s\b", re.I), ""),
]
# Informal spellings of the negated auxiliaries ("doesnt", "cant", "wont").
_BARE_NEG = re.compile(r"\b(do|does|did|is|are|was|were|has|have|had|could|would|should|ca|wo)nt\b", re.I)

_NUMBER_ABBR = re.compile(r"\b(my|your|our|their|his|her|its|the|this|that)\s+no\.(?=\s|$)", re.I)
_QUOTED = re.compile(r"[\"“”「『`]([^\"“”「」『』`]{1,80})[\"“”」』`]")
_URL = re.compile(r"(?:https?://\S+|(?<![\w/])/[\w.-]+(?:/[\w.{}-]+)+)")
_TOKEN = re.compile(rf"[{HAN}]+|[A-Za-z0-9$%€£]+(?:[._][A-Za-z0-9]+)*|[$%€£]")
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_ORDINAL = re.compile(r"^(\d+)(st|nd|rd|th)$")


@dataclass(frozen=True, slots=True)
class Token:
    text: str  # normalised, stemmed: what is compared
    raw: str  # lower-case surface form
    stop: bool = False
    neg: bool = False
    entity: bool = False
    number: bool = False
    han: bool = False


@dataclass(slots=True)
class Analysis:
    text: str
    lang: str  # "zh" when the text has Chinese characters, else "en"
    tokens: list[Token]
    quoted: frozenset[str] = frozenset()  # quoted or back-ticked spans, URLs and paths
    numbers: tuple[str, ...] = ()  # hard numbers (digits, or number words other than "one"/一), sorted
    negations: int = 0
    surface: str = ""  # lower-cased, normalised text (for phrase lookups)
    words: frozenset[str] = field(default_factory=frozenset)  # stemmed token texts

    @property
    def content(self) -> list[Token]:
        return [t for t in self.tokens if not t.stop and not t.neg]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English suffix stripper: enough to match `refunds`/`refunded`/`refundable`."""
    w = word
    if len(w) <= 3 or not w.isalpha():
        return w
    for suffix, repl, min_len in (
        ("ational", "ate", 8), ("ization", "ize", 8), ("ically", "ic", 7), ("ically", "ic", 7),
        ("ies", "y", 5), ("ied", "y", 5), ("able", "", 7), ("ible", "", 7), ("ness", "", 7), ("ment", "", 8),
        ("ing", "", 6), ("ed", "", 5), ("ly", "", 6), ("es", "", 5), ("s", "", 4),
    ):
        if w.endswith(suffix) and len(w) >= min_len:
            if suffix == "s" and w.endswith(("ss", "us", "is")):
                return w
            if suffix == "es" and not w.endswith(("ses", "xes", "zes", "ches", "shes")):
                suffix = "s"
            if suffix in ("able", "ible") and len(w) - len(suffix) < 5:
                break  # disable, enable: the stem would be another word
            w = w[: len(w) - len(suffix)] + repl
            if suffix in ("ing", "ed") and len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # stopped → stop, logging → log
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]  # cache/cached/caching, remove/removal → one form
    return w


def parse_cn_number(run: str) -> int | None:
    total, section, digit = 0, 0, None
    last_unit, prev = 0, ""
    for ch in run:
        if ch in _CN_DIGIT:
            # digit by digit (二〇二五) or one digit before a unit (三千)
            digit = _CN_DIGIT[ch] if digit is None else digit * 10 + _CN_DIGIT[ch]
        else:
            unit = last_unit = _CN_UNIT[ch]
            if unit >= 10_000:
                section = (section + (digit or 0)) * unit
                total += section
                section = 0
            else:
                section += (1 if digit is None else digit) * unit
            digit = None
        prev = ch
    if digit is not None and digit < 10 and last_unit >= 100 and run[-2:-1] in _CN_UNIT and prev != "零":
        # a last digit right after a unit of a hundred or more counts the next unit down: 两千五 is
        # 2500 and 一百二 is 120 (with 零 between them it is the ones: 一千零五 is 1005)
        digit *= last_unit // 10
    return total + section + (digit or 0)


def _cn_numbers(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        run = m.group(0)
        after = text[m.end() : m.end() + 1]
        if run == "一" or (run == "两" and after not in _CN_MEASURE):
            return run  # a lone 一 is mostly "a" (一个, 一下, 一次性, 统一); it stays a character
        if len(run) == 1 and run in "万亿":
            return run
        approx = _CN_APPROX.fullmatch(run)
        if approx and _CN_DIGIT[approx.group(2)] == _CN_DIGIT[approx.group(1)] + 1:
            # two neighbouring digits are a rough count, not a two-digit number: 两三天 is 2-3 days
            # (as `2-3天` reads), 三四百 is 300-400
            unit = _CN_UNIT.get(approx.group(3), 1)
            return f" {_CN_DIGIT[approx.group(1)] * unit}-{_CN_DIGIT[approx.group(2)] * unit} "
        value = parse_cn_number(run)
        return run if value is None else f" {value} "

    return _CN_NUM_RE.sub(repl, text)


_EN_NUM_WORDS = "|".join(sorted([*_EN_NUM, *_EN_SCALE], key=len, reverse=True))
_EN_NUM_RUN = re.compile(rf"\b(?:{_EN_NUM_WORDS})(?:(?:[\s-]+(?:and\s+)?)(?:{_EN_NUM_WORDS}))*\b", re.I)


def _en_numbers(text: str) -> str:
    """`twenty-five` → 25, `three` → 3, `five thousand` → 5000; a lone `one` stays (mostly a pronoun)."""

    def repl(m: re.Match[str]) -> str:
        words = [w for w in re.split(r"[\s-]+", m.group(0).lower()) if w and w != "and"]
        if words == ["one"]:
            return m.group(0)
        total, current = 0, 0
        for w in words:
            if w in _EN_NUM:
                current += _EN_NUM[w]
            elif w == "hundred":
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * _EN_SCALE[w]
                current = 0
        return str(total + current)

    return _EN_NUM_RUN.sub(repl, text)


_SEP = re.compile(r"[_-]+")
_DOTTED = re.compile(r"[A-Za-z]+(?:\.[A-Za-z]+)+")
_PARTS = re.compile(r"\d+(?:st|nd|rd|th)\b|\d+(?:\.\d+)*|[A-Za-z]+|[$%€£]")


@lru_cache(maxsize=65536)
def _split_latin(piece: str) -> tuple[str, ...]:
    """`base_url` → base, url; `node.js` → nodejs; `v0.28` → v, 0.28; `Win10` → Win, 10; `1,000` handled earlier."""
    parts: list[str] = []
    for chunk in _SEP.split(piece):
        if not chunk:
            continue
        if _DOTTED.fullmatch(chunk):
            chunk = chunk.replace(".", "")
        parts.extend(x for x in _PARTS.findall(chunk) if x)
    return tuple(parts)


@lru_cache(maxsize=4096)
def analyze(text: str) -> Analysis:
    norm = unicodedata.normalize("NFKC", text).replace("’", "'")
    quoted = {q.strip().lower() for q in _QUOTED.findall(norm)}
    quoted |= {u.lower().rstrip(".,;:?!") for u in _URL.findall(norm)}
    norm = re.sub(r"(?<=\d),(?=\d{3}\b)", "", norm)  # 1,000 → 1000
    norm = re.sub(r"\b(\d+(?:\.\d+)?)[kK]\b", lambda m: str(int(float(m.group(1)) * 1000)), norm)
    norm = _NUMBER_ABBR.sub(r"\1 number", norm)  # "my no." is "my number", not a negation
    for pattern, repl in _CONTRACTIONS:
        norm = pattern.sub(repl, norm)
    norm = _BARE_NEG.sub(lambda m: m.group(1) + " not", norm)
    norm = re.sub(ZH_A_NOT_A, r"\1", norm)  # 会不会 → 会
    if _HAN_RE.search(norm):
        norm = normalize_zh.chinese(norm)  # colloquial and framed question words, time words (normalize_zh)
    norm = _en_numbers(_cn_numbers(normalize.chinese_quantities(norm, parse_cn_number)))
    norm = normalize.english(norm)  # informal spellings, request frames, quantities (normalize)
    lang = "zh" if _HAN_RE.search(norm) else "en"

    tokens: list[Token] = []
    sentence_start = True
    for m in _TOKEN.finditer(norm):
        piece = m.group(0)
        if _HAN_RE.match(piece):
            tokens.extend(_han_tokens(piece))
            sentence_start = False
            continue
        pieces = _split_latin(piece)
        compound = len(pieces) > 1 or "_" in piece or "." in piece
        for orig in pieces:
            tokens.append(_latin_token(orig, orig.lower(), lang, compound, sentence_start))
            sentence_start = False
        # A new sentence starts after ., ? or ! (capitalised first words are not names).
        tail = norm[m.end() : m.end() + 2]
        sentence_start = bool(re.match(r"\s*[.?!]", tail))

    tokens = _months_counted(tokens)
    numbers = tuple(sorted(t.text for t in tokens if t.number and t.raw not in ("one", "一")))
    negations = sum(1 for t in tokens if t.neg)
    surface = " ".join(t.raw for t in tokens)
    return Analysis(norm, lang, tokens, frozenset(quoted), numbers, negations, surface,
                    frozenset(t.text for t in tokens))


@lru_cache(maxsize=65536)
def _latin_token(orig: str, low: str, lang: str, compound: bool, sentence_start: bool) -> Token:
    if _NUMBER.match(low) or _ORDINAL.match(low):
        value = _ORDINAL.sub(r"\1", low)
        value = value.rstrip("0").rstrip(".") if "." in value else value
        return Token(value, low, number=True, entity=True)
    entity = len(orig) > 1 and (
        lang == "zh"
        or compound
        or (len(orig) >= 2 and orig.isupper())
        or any(c.isupper() for c in orig[1:])
        or (orig[:1].isupper() and not sentence_start)
    )
    if low not in EN_STOP and not entity and (slip := _function_word_slip(low)) is not None:
        return Token(slip, low, stop=True)  # `wher` for `where`, `teh` for `the`
    return Token(stem(low), low, stop=low in EN_STOP, neg=low in EN_NEGATORS, entity=entity and low not in EN_STOP)


@lru_cache(maxsize=1)
def _long_stop_words() -> dict[int, tuple[str, ...]]:
    by_len: dict[int, list[str]] = {}
    for w in EN_STOP - EN_STOP_FORMS:
        if len(w) >= 3:
            by_len.setdefault(len(w), []).append(w)
    return {n: tuple(sorted(ws)) for n, ws in by_len.items()}


@lru_cache(maxsize=65536)
def _function_word_slip(low: str) -> str | None:
    """A misspelt function word (`wher`, `ther`, `whta`, `teh`): a token that is no English word and
    of four letters or more and one edit from a function word of as many (three letters: two of them
    swapped, `teh`; `hrs` is an abbreviation, not `hers` misspelt). Function words
    carry no content, so the slip is one too; a content word is never made one (it would be a real
    word, or more than one edit away)."""
    if not low.isalpha() or len(low) < 3 or len(low) > 8:
        return None
    if known_word(low):
        return None  # a word some dictionary knows (`whey`, `kindle`) is no slip, whatever it is one edit from
    stops = _long_stop_words()
    for n in (len(low) - 1, len(low), len(low) + 1):
        for w in stops.get(n, ()):
            if (len(w) >= 4 <= len(low) and damerau1(low, w) == 1) or (len(w) == 3 == len(low) and _swapped(low, w)):
                return w
    return None


def _swapped(x: str, y: str) -> bool:
    diff = [i for i in range(len(x)) if x[i] != y[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]]


def damerau1(a: str, b: str) -> int:
    """Optimal-string-alignment distance, small strings only."""
    la, lb = len(a), len(b)
    prev2: list[int] = []
    prev = list(range(lb + 1))
    for i in range(1, la + 1):
        cur = [i] + [0] * lb
        for j in range(1, lb + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[lb]


# what may count months: a number, or 一 几 半 (`一个月`, `几个月`, `半个月`)
_MONTH_COUNTERS = frozenset("一几半")


def _months_counted(tokens: list[Token]) -> list[Token]:
    """`3个月` (three months) is not `3月` (March), nor `几个月` (how many months) `几月` (which
    month): after a number, `个月` is one content token, where `个` alone is a function word."""
    out: list[Token] = []
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if (t.text == "个" and t.stop and k + 1 < len(tokens) and tokens[k + 1].text == "月" and out
                and (out[-1].number or out[-1].text in _MONTH_COUNTERS)):
            out.append(Token("个月", "个月", han=True))
            k += 2
            continue
        out.append(t)
        k += 1
    return out


def _han_tokens(run: str) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(run):
        for size in (4, 3, 2, 1):
            word = run[i : i + size]
            if len(word) == size and (word in ZH_STOP or word in ZH_NEGATORS):
                neg = word in ZH_NEGATORS
                out.append(Token(word, word, stop=not neg, neg=neg, han=True))
                i += size
                break
        else:
            out.append(Token(run[i], run[i], han=True))
            i += 1
    return out
