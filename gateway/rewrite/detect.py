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

# (kind, pattern, flags); order matters only for the kind reported when spans overlap (longest wins).
_BUILTIN: tuple[tuple[str, str, int], ...] = (
    # ---- dates and times, English ----
    ("datetime", r"\b\d{4}-\d{2}-\d{2}[T ]" + _HM + r"(?:Z|[+-]\d{2}:?\d{2})?(?![\w:])", 0),
    ("datetime", rf"\b(?:{_WD},?\s+)?\d{{1,2}}\s+{_MON}\s+\d{{4}}\s+{_HM}{_TZ}?\b", re.I),
    ("date", r"\b\d{4}[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])\b", 0),
    ("date", r"\b(?:0?[1-9]|[12]\d|3[01])[-/.](?:0?[1-9]|[12]\d|3[01])[-/.]\d{4}\b", 0),
    ("date", rf"\b(?:{_WD},?\s+)?{_MON}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b", re.I),
    ("date", rf"\b(?:{_WD},?\s+)?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}\.?,?\s+\d{{4}}\b", re.I),
    ("date", rf"\b(?:{_WD},?\s+){_MON}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b", re.I),
    ("date", rf"\b{_MON}\s+\d{{4}}\b", re.I),
    ("time", r"(?<![\w:.])" + _HM + r"(?:\s?[ap]\.?m\.?)?" + _TZ + r"?(?![\w:])", re.I),
    ("time", r"\b(?:1[0-2]|0?[1-9])\s?[ap]\.?m\.?(?!\w)", re.I),
    # ---- dates and times, Chinese (no \b: it does not work next to CJK characters) ----
    ("date", r"\d{4}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?", 0),
    ("date", r"(?<!\d)\d{1,2}\s*月\s*\d{1,2}\s*[日号]", 0),
    ("date", rf"[{_CN_NUM}]{{4}}年[{_CN_NUM}]{{1,2}}月(?:[{_CN_NUM}]{{1,3}}[日号])?", 0),
    ("date", r"(?:星期|礼拜|周)[一二三四五六日天]", 0),
    ("time", r"(?:凌晨|早上|上午|中午|下午|傍晚|晚上)?\s*(?<!\d)\d{1,2}\s*[点时]"
             r"(?:\s*(?:\d{1,2}\s*分|半|一刻|三刻))?(?:\s*\d{1,2}\s*秒)?", 0),
    ("time", r"(?:凌晨|早上|上午|中午|下午|傍晚|晚上)\s*" + _HM, 0),
    ("time", rf"(?:凌晨|早上|上午|中午|下午|傍晚|晚上)?[{_CN_NUM}]{{1,3}}[点时](?:[{_CN_NUM}]{{1,3}}分)?", 0),
    # ---- epoch seconds (2017..2036) and milliseconds ----
    ("epoch", r"\b(?:1[5-9]|20)\d{8}(?:\d{3})?\b", 0),
    # ---- ids ----
    ("uuid", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", 0),
    ("trace_id", r"\b[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}\b", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
    ("labelled_id", r"\b(?:x-)?(?:request|req|trace|span|correlation|corr|session|conversation|run|message|msg|"
                    r"call|event|transaction|txn)[ _-]?id\b\s*[:=#]?\s*[\"'`]?([A-Za-z0-9][A-Za-z0-9._:/+=-]{2,}[A-Za-z0-9=])", re.I),
    ("prefixed_id", r"\b(?:req|request|trace|span|sess|session|corr|msg|run|call|evt|txn|chatcmpl|resp|conv|"
                    r"thread|job|task|cus|usr)[_-][A-Za-z0-9]{6,}\b", 0),
    ("ulid", r"\b[0-9A-HJKMNP-TV-Z]{26}\b", 0),
    ("hex_id", r"\b[0-9a-fA-F]{16,}\b", 0),
    ("base64_id", r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])", 0),
)

_ID_KINDS = frozenset({"prefixed_id", "ulid", "hex_id", "base64_id"})


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str


def _id_like(value: str, kind: str) -> bool:
    """Id candidates must look random: digits mixed with letters (so words and names stay)."""
    digits = sum(c.isdigit() for c in value)
    if kind == "prefixed_id":
        suffix = re.split(r"[_-]", value, maxsplit=1)[-1]
        return sum(c.isdigit() for c in suffix) >= 2 or suffix.isdigit()
    if kind == "ulid":
        return digits >= 2 and any(c.isalpha() for c in value)
    if kind == "hex_id":
        return digits >= 2 and any(c.isalpha() for c in value) and (value.islower() or value.isupper() or digits > 4)
    if kind == "base64_id":
        return (digits >= 2 and any(c.isupper() for c in value) and any(c.islower() for c in value)
                and not value.startswith(("http", "www")))
    return True


@lru_cache(maxsize=1)
def _builtin() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((kind, re.compile(pattern, flags)) for kind, pattern, flags in _BUILTIN)


@lru_cache(maxsize=256)
def _tenant(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    # The policy validator compiled them with IGNORECASE already; an invalid one cannot get here.
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


class VolatileDetector:
    """Finds volatile spans; one instance per set of tenant patterns (cheap: regexes are cached)."""

    def __init__(self, tenant_patterns: Sequence[str] = ()) -> None:
        self.tenant_patterns = _tenant(tuple(tenant_patterns))

    def spans(self, text: str) -> list[Span]:
        """Non-overlapping volatile spans of `text`, in order."""
        if not text:
            return []
        found: list[Span] = []
        for kind, rx in _builtin():
            for m in rx.finditer(text):
                start, end = (m.start(1), m.end(1)) if rx.groups and m.group(1) is not None else m.span()
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
