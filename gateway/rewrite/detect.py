"""Find volatile spans — values that change from request to request — inside prompt text.

A vendor prompt cache only hits on an exact prefix, so one timestamp or request id near the top of a
system prompt makes every request a miss. This module only *finds* such spans; `move.py` moves them.

Built-in kinds (each a compiled regex, run once per text):
- dates and times in common English formats (ISO 8601, RFC 2822, `11/05/2026`, `Nov 5, 2026`,
  `5 November 2026`, `10:23:45 PM UTC`) and Chinese ones (`2026年11月5日`, `二〇二六年十一月五日`,
  `星期四`, `下午3点20分`, `上午10:23`), and Unix epoch seconds/milliseconds;
- ids: UUIDs, W3C traceparents, ULIDs, JWTs, long hex strings, base64-like tokens, prefixed ids
  (`req_8f3k2m1x`, `trace-01hx...`) and the value after a label (`request id: abc-42`).
Tenant regexes (policy `prompt_rewrite.volatile_patterns`) are compiled case-insensitively, as the
policy validator compiles them; a pattern with a capturing group moves only group 1, else the match.

False positives cost little: a moved value keeps all its information (it is restated in the context
block), the prefix only gets a placeholder where a constant stood. False negatives cost cache hits,
so the patterns lean towards catching; the id patterns still require digits so that ordinary words
and identifiers (`user_preferences`) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

_MON = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
        r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_WD = r"(?:Mon(?:day)?|Tue(?:s(?:day)?)?|Wed(?:nesday)?|Thu(?:r(?:s(?:day)?)?)?|Fri(?:day)?|Sat(?:urday)?|Sun(?:day)?)"
_TZ = r"(?:\s?(?:Z|UTC|GMT|[ECMP][SD]T|CST|BST|CET|CEST|JST|KST|IST|HKT|SGT|AEST|[+-]\d{2}:?\d{2}))"
_HM = r"(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d{1,9})?)?"
_CN_NUM = "〇零一二三四五六七八九十"

# (kind, pattern, flags, left boundary). Patterns start with a plain character class so that the regex
# engine can skip quickly to the positions that may start a match (a leading `\b` or look-behind
# defeats that and costs ~10x); the word boundary on the left is checked afterwards instead.
_BUILTIN: tuple[tuple[str, str, int, bool], ...] = (
    # ---- dates and times, English ----
    ("datetime", r"\d{4}-\d{2}-\d{2}[T ]" + _HM + r"(?:Z|[+-]\d{2}:?\d{2})?(?![\w:])", 0, True),
    ("datetime", rf"{_WD},?\s+\d{{1,2}}\s+{_MON}\s+\d{{4}}\s+{_HM}{_TZ}?\b", re.I, True),
    ("datetime", rf"\d{{1,2}}\s+{_MON}\s+\d{{4}}\s+{_HM}{_TZ}?\b", re.I, True),
    ("date", r"\d{4}[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])\b", 0, True),
    ("date", r"\d{1,2}[-/.]\d{1,2}[-/.]\d{4}\b", 0, True),
    ("date", rf"(?:{_WD},?\s+)?{_MON}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b", re.I, True),
    ("date", rf"(?:{_WD},?\s+)?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}\.?,?\s+\d{{4}}\b", re.I, True),
    ("date", rf"{_WD},?\s+{_MON}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b", re.I, True),
    ("date", rf"{_MON}\s+\d{{4}}\b", re.I, True),
    ("time", r"\d{1,2}:[0-5]\d(?::[0-5]\d(?:[.,]\d{1,9})?)?(?:\s?[ap]\.?m\.?)?" + _TZ + r"?(?![\w:])", re.I, True),
    ("time", r"\d{1,2}\s?[ap]\.?m\.?(?!\w)", re.I, True),
    # ---- dates and times, Chinese (no word boundary: \b means nothing next to CJK characters) ----
    ("date", r"\d{4}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?", 0, False),
    ("date", r"\d{1,2}\s*月\s*\d{1,2}\s*[日号]", 0, False),
    ("date", rf"[{_CN_NUM}]{{4}}年[{_CN_NUM}]{{1,2}}月(?:[{_CN_NUM}]{{1,3}}[日号])?", 0, False),
    ("date", r"(?:星期|礼拜|周)[一二三四五六日天]", 0, False),
    ("time", r"\d{1,2}\s*[点时](?:\s*(?:\d{1,2}\s*分|半|一刻|三刻))?(?:\s*\d{1,2}\s*秒)?", 0, False),
    ("time", r"(?:凌晨|早上|上午|中午|下午|傍晚|晚上)\s*(?:\d{1,2}\s*[点时](?:\s*(?:\d{1,2}\s*分|半|一刻|三刻))?"
             r"|" + _HM + r"|[" + _CN_NUM + r"]{1,3}[点时](?:[" + _CN_NUM + r"]{1,3}分)?)", 0, False),
    ("time", rf"[{_CN_NUM}]{{1,3}}[点时](?:[{_CN_NUM}]{{1,3}}分)?", 0, False),
    # ---- epoch seconds (2017..2036) and milliseconds ----
    ("epoch", r"(?:1[5-9]|20)\d{8}(?:\d{3})?\b", 0, True),
    # ---- ids ----
    ("uuid", r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", 0, True),
    ("trace_id", r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}\b", 0, True),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0, True),
    ("labelled_id", r"(?:x-)?(?:request|req|trace|span|correlation|corr|session|conversation|run|message|msg|"
                    r"call|event|transaction|txn)[ _-]?id\b\s*[:=#]?\s*[\"'`]?"
                    r"(?P<value>[A-Za-z0-9][A-Za-z0-9._:/+=-]{2,}[A-Za-z0-9=])", re.I, True),
    ("prefixed_id", r"(?:req|request|trace|span|sess|session|corr|msg|run|call|evt|txn|chatcmpl|resp|conv|"
                    r"thread|job|task|cus|usr)[_-][A-Za-z0-9]{6,}\b", 0, True),
    ("ulid", r"[0-9A-HJKMNP-TV-Z]{26}\b", 0, True),
    ("hex_id", r"[0-9a-fA-F]{16,}\b", 0, True),
    ("base64_id", r"[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])", 0, True),
)

# Every built-in pattern needs a digit, a Chinese numeral or weekday word, a JWT header or an "id"
# label; the detector first finds those cheaply and runs the patterns only in windows around them.
_TRIGGER = re.compile(r"\d+|[〇零一二三四五六七八九十]+|星期|礼拜|周|eyJ")
_ID_LABEL = re.compile(r"(?:[ _-][iI][dD]|Id|ID)\b")
# A month name next to a number: every month pattern has one ("Nov 5", "5 November", "Nov. 2026").
_MONTH_WORD = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,?"
_MONTH_HINT = re.compile(rf"\b{_MONTH_WORD}\s+\d|\d(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_WORD}\b", re.IGNORECASE)
_REACH = 48  # characters around a trigger that a pattern may span (longest date/time form + margin)
_MAX_TOKEN = 4096  # a window widens to whole whitespace-delimited tokens, at most this far

_ID_KINDS = frozenset({"prefixed_id", "ulid", "hex_id", "base64_id"})


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str


def _id_like(value: str, kind: str) -> bool:
    """Id candidates must look random: digits mixed with letters (so words and names stay)."""
    # map over the str methods: a third of a generator's cost, on every candidate of every new text
    digits = sum(map(str.isdigit, value))
    if kind == "prefixed_id":
        suffix = re.split(r"[_-]", value, maxsplit=1)[-1]
        return sum(map(str.isdigit, suffix)) >= 2 or suffix.isdigit()
    if kind == "ulid":
        return digits >= 2 and any(map(str.isalpha, value))
    if kind == "hex_id":
        return digits >= 2 and any(map(str.isalpha, value)) and (value.islower() or value.isupper() or digits > 4)
    if kind == "base64_id":
        return (digits >= 2 and any(map(str.isupper, value)) and any(map(str.islower, value))
                and not value.startswith(("http", "www")))
    return True


@lru_cache(maxsize=1)
def _builtin() -> tuple[tuple[re.Pattern[str], str | None, dict[str, tuple[str, bool]]], ...]:
    """The patterns as a few alternations (one regex pass per text instead of ~25: per-call overhead
    dominates on sentence-sized pieces), each with the hint a text must contain for it to be tried at
    all — the month-name and id-label patterns are the slow ones, and most text has neither. Named
    group `g<i>` is pattern i; its (kind, left-boundary) is in the map."""
    families: dict[str | None, list[tuple[int, str, str, int, bool]]] = {}
    for i, (kind, pattern, flags, left) in enumerate(_BUILTIN):
        hint = "month" if _MON in pattern else "label" if "(?P<value>" in pattern else None
        families.setdefault(hint, []).append((i, kind, pattern, flags, left))
    out = []
    for hint, items in families.items():
        alternatives = [f"(?P<g{i}>{'(?i:' + p + ')' if flags & re.I else p})" for i, _, p, flags, _ in items]
        out.append((re.compile("|".join(alternatives)), hint, {f"g{i}": (k, left) for i, k, _, _, left in items}))
    return tuple(out)


def _outer(m: re.Match[str], groups: dict[str, tuple[str, bool]]) -> str:
    """The pattern group that matched (`lastgroup` names the inner `value` group of a labelled id)."""
    return next(name for name in groups if m.group(name) is not None)


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


@lru_cache(maxsize=256)
def _tenant(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    # The policy validator compiled them with IGNORECASE already; an invalid one cannot get here.
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


class VolatileDetector:
    """Finds volatile spans. Use `detector_for(patterns)`: one shared instance per set of tenant
    patterns, whose cache of scanned pieces (lines and sentences, see `chunks`) makes a long, mostly
    constant system prompt cheap: only the sentences that changed since an earlier request are
    scanned again. Measured on the shared 2-core machine: a 16 KB prompt dense with numbers costs
    50-100 ms the first time (once per distinct text), then ~0.3 ms per request."""

    def __init__(self, tenant_patterns: Sequence[str] = (), cache_lines: int = 8192) -> None:
        self.tenant_patterns = _tenant(tuple(tenant_patterns))
        self._lines: dict[str, tuple[Span, ...]] = {}
        self._max = cache_lines

    def spans(self, text: str) -> list[Span]:
        """Non-overlapping volatile spans of `text`, in order. Spans do not cross line breaks or
        sentence ends (see `chunks`)."""
        if len(text) < 256:
            return self._scan(text)
        out: list[Span] = []
        offset = 0
        for chunk in chunks(text):
            found = self._lines.get(chunk)
            if found is None:
                found = tuple(self._scan(chunk))
                if len(self._lines) >= self._max:  # FIFO is enough: hot chunks come straight back
                    del self._lines[next(iter(self._lines))]
                self._lines[chunk] = found
            if found:
                out.extend(Span(s.start + offset, s.end + offset, s.kind) for s in found)
            offset += len(chunk)
        return out

    def _scan(self, text: str) -> list[Span]:
        if not text:
            return []
        found: list[Span] = []
        windows = _windows(text)
        hints = {"month": _MONTH_HINT.search(text) is not None, "label": _ID_LABEL.search(text) is not None}
        for rx, needs, groups in _builtin():
            if needs is not None and not hints[needs]:
                continue
            for m in (m for a, b in windows for m in rx.finditer(text, a, b)):
                kind, left = groups[m.lastgroup] if m.lastgroup in groups else groups[_outer(m, groups)]
                if left and m.start() > 0 and _word(text[m.start() - 1]):
                    continue
                start, end = m.span("value") if kind == "labelled_id" and m.group("value") else m.span()
                if end <= start:
                    continue
                if kind in _ID_KINDS and not _id_like(text[start:end], kind):
                    continue
                found.append(Span(start, end, kind))
        for rx in self.tenant_patterns:
            for m in rx.finditer(text):
                start, end = (m.start(1), m.end(1)) if rx.groups and m.group(1) is not None else m.span()
                if end > start:
                    found.append(Span(start, end, "tenant_pattern"))
        return merge(found, text)


@lru_cache(maxsize=256)
def detector_for(patterns: tuple[str, ...] = ()) -> VolatileDetector:
    """The shared detector of one set of tenant patterns."""
    return VolatileDetector(patterns)


# Words after which ". " does not end a sentence ("Nov. 5", "a.m. PST", "Dr. Smith").
_NO_SPLIT_AFTER = frozenset((
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "mon", "tue", "tues", "wed",
    "thu", "thur", "thurs", "fri", "sat", "sun", "a.m", "p.m", "am", "pm", "mr", "mrs", "ms", "dr", "st", "no", "vs",
    "etc", "inc", "ltd", "jr", "sr", "e.g", "i.e", "approx"))


def chunks(text: str) -> list[str]:
    """`text` cut into pieces whose concatenation is `text`: after every line break, and after every
    sentence end (". " except after an abbreviation, "。", "！", "？") — boundaries defined by the
    content itself, so a changed value only changes its own piece and the others stay cached."""
    out: list[str] = []
    for line in text.split("\n"):
        pieces = line.split(". ")
        current = ""
        for i, piece in enumerate(pieces):
            current += piece
            if i == len(pieces) - 1:
                break
            current += ". "
            last = piece.rsplit(None, 1)[-1].lower() if piece.strip() else ""
            if last in _NO_SPLIT_AFTER or len(last) <= 1:
                continue
            out.extend(_cjk_sentences(current))
            current = ""
        out.extend(_cjk_sentences(current + "\n"))
    out[-1] = out[-1][:-1]  # no line break after the last line
    return [c for c in out if c]


def _cjk_sentences(text: str) -> list[str]:
    if "。" not in text and "！" not in text and "？" not in text:
        return [text]
    out, start = [], 0
    for i, ch in enumerate(text):
        if ch in "。！？":
            out.append(text[start:i + 1])
            start = i + 1
    out.append(text[start:])
    return out


def _windows(text: str) -> list[tuple[int, int]]:
    """Merged [start, end) ranges around every trigger, widened to whitespace on both sides so that
    no token is cut (a pattern sees the same boundaries as on the whole text)."""
    n = len(text)
    ranges = [(m.start() - _REACH, m.end() + _REACH) for m in _TRIGGER.finditer(text)]
    ranges += [(m.start() - _REACH, m.end() + 2 * _REACH) for m in _ID_LABEL.finditer(text)]
    if not ranges:
        return []
    ranges.sort()
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        a, b = max(0, a), min(n, b)
        lo = max(0, a - _MAX_TOKEN)
        while a > lo and not text[a - 1].isspace():
            a -= 1
        hi = min(n, b + _MAX_TOKEN)
        while b < hi and not text[b].isspace():
            b += 1
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def merge(spans: Iterable[Span], text: str) -> list[Span]:
    """Union of overlapping spans; the kind of the longest contributor names the union. Whitespace at
    either edge is left in place (the prose around a value stays as written)."""
    ordered = sorted(spans, key=lambda s: (s.start, -s.end))
    out: list[Span] = []
    longest: list[int] = []
    for s in ordered:
        if out and s.start < out[-1].end:
            last = out[-1]
            kind = s.kind if s.end - s.start > longest[-1] else last.kind
            longest[-1] = max(longest[-1], s.end - s.start)
            out[-1] = Span(last.start, max(last.end, s.end), kind)
        else:
            out.append(s)
            longest.append(s.end - s.start)
    trimmed: list[Span] = []
    for s in out:
        start, end = s.start, s.end
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            trimmed.append(Span(start, end, s.kind))
    return trimmed
