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
- `what are the steps to`, `what is the process for`, `what is the procedure to` ask `how to`.
- `percent`, `per cent` after a number are `%`; Chinese `百分之N` is `N%` (digits or number words).
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
_PERCENT = re.compile(r"(?<=\d)\s*(?:percent|per\s+cent)\b", re.I)
_ZH_PERCENT = re.compile(r"百分之([零〇一二两三四五六七八九十百千]+|\d+(?:\.\d+)?)")


def english(text: str) -> str:
    """The informal, framing and percent rewrites (run after contractions are expanded)."""
    text = _WH_IS.sub(r"\1", text)
    for pattern, repl in _MODAL:
        text = pattern.sub(repl, text)
    text = _REQUEST.sub("", text)
    text = _STEPS.sub("how to", text)
    return _PERCENT.sub("%", text)


def chinese_percent(text: str, parse: Callable[[str], int | None]) -> str:
    """`百分之五` / `百分之5` → `5%` (before Chinese number words become digits: `百` is one of them)."""
    if "百分之" not in text:
        return text

    def repl(m: re.Match[str]) -> str:
        run = m.group(1)
        value = run if run[0].isdigit() else parse(run)
        return f"{value}%"

    return _ZH_PERCENT.sub(repl, text)
