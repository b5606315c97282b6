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
  `what is the price of` / `what's the cost of` ask `how much is`.
- A closing plea that restates the question (`…, what's wrong?`, `what's going on?`, `what should I
  do?`, `?? help`) goes when the question before it has three words or more: what is asked is
  what comes before it.
- `percent`, `per cent` after a number are `%`; Chinese `百分之N` is `N%` (digits or number words).
- `half an hour` is `30 minutes`, `半小时` is `30分钟` (the same duration, said both ways); `3月份`
  is `3月` (`月份`, "month", after a number).
- Between two questions (`ones_as_articles`): `a month`, `an hour`, `one position` are `1 month`,
  `1 hour`, `1 position` when the other question says `1` before the same word. Only then: a lone
  `a` is an article, not a number, so "how much is it a month" keeps matching "per month".
"""

from __future__ import annotations

import re
from collections.abc import Callable

_WH_IS = re.compile(r"\b(what|how|where|when|why|who|that|there|here)s\b", re.I)
_MODAL = [(re.compile(r"\bgotta\b", re.I), "have to"), (re.compile(r"\bgonna\b", re.I), "going to"),
          (re.compile(r"\bwanna\b", re.I), "want to")]
_WH = r"(?:how|what|why|where|when|which|who|whether|if)\b"
_REQUEST = re.compile(
    r"\b(?:(?:could|can|would|will)\s+(?:you|someone|anyone)\s+(?:please\s+)?)?"
    rf"(?:explain|show\s+me|tell\s+me|let\s+me\s+know)(?:\s+to\s+me)?\s+(?={_WH})", re.I)
# after contractions: "what's the process for" arrives as "what the process for"
_STEPS = re.compile(r"\bwhat(?:\s+(?:are|is|were|was))?\s+the\s+(?:steps|process|procedure)\s+(?:to|for)\b", re.I)
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


def english(text: str) -> str:
    """The informal, framing and percent rewrites (run after contractions are expanded)."""
    text = _WH_IS.sub(r"\1", text)
    for pattern, repl in _MODAL:
        text = pattern.sub(repl, text)
    text = _REQUEST.sub("", text)
    text = _STEPS.sub("how to", text)
    text = _PRICE.sub("how much is", text)
    tail = _TAIL.search(text)
    if tail and len(re.findall(r"[A-Za-z0-9]+", text[: tail.start()])) >= 3:
        text = text[: tail.start()]
    text = _HALF_HOUR.sub("30 minutes", text)
    return _PERCENT.sub("%", text)


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


_ONE_BEFORE = re.compile(r"(?<![\d.])\b1\s+([A-Za-z]+)")
_ARTICLE = re.compile(r"\b(?:a|an|one)\s+([A-Za-z]+)", re.I)


def ones_as_articles(a: str, b: str, stem: Callable[[str], str]) -> tuple[str, str]:
    """`a month` / `one month` on one side is `1 month` when the other side says `1 month`
    (`months`, by stem): the same quantity, written with an article or a number word."""
    def rewrite(digits: str, words: str) -> str:
        counted = {stem(m.group(1).lower()) for m in _ONE_BEFORE.finditer(digits)}

        def one(w: re.Match[str]) -> str:
            return f"1 {w.group(1)}" if stem(w.group(1).lower()) in counted else w.group(0)

        return _ARTICLE.sub(one, words) if counted else words

    return rewrite(b, a), rewrite(a, b)
