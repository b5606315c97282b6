"""Deterministic answers that read like real ones.

The answer is a pure function of the request: the random generator is seeded with a hash of the model
and the whole rendered conversation (tools, system, every message), so two requests that differ anywhere
get different answers (a cache that mixes them up is caught by content), and the same request always gets
the same answer. The topic words come from the last user message, so the demo reads naturally.

Tool calls (documented in docs/emulators.md): when tools are offered and `tool_choice` is not "none", the
model calls
  - the named tool when `tool_choice` names one (after a tool result too);
  - with auto/required/any, a tool whose name appears in the last user message (case-insensitive;
    `get_weather` also matches "get weather"), unless the conversation ends with a tool result under auto;
  - with required/any and no name in the question, the first tool (after a tool result: the first tool
    not called yet in the conversation).
Arguments and structured outputs are generated from the JSON schema (schema_values.py) and validate
against it. After a tool result under auto the model answers in text (JSON when a schema is asked for).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from gateway_dev.emulators.schema_values import fill
from gateway_dev.emulators.tokens import Tokens, get_tokenizer

_STOPWORDS = frozenset(
    [
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "do", "does", "for", "from",
        "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or",
        "our", "please", "should", "so", "than", "that", "the", "their", "them", "then", "there", "these",
        "they", "this", "to", "us", "was", "we", "what", "when", "where", "which", "who", "why", "will", "with",
        "would", "you", "your", "about", "tell", "explain", "give", "write", "some", "any", "more", "much",
        "just", "also", "very", "make", "get"
    ]
)

_OPENINGS = [
    "Here is a short answer about {topic}.",
    "Good question about {topic}.",
    "In short, {topic} comes down to a few points.",
    "Let me walk through {topic} briefly.",
    "There are a few things worth knowing about {topic}.",
    "The main thing to understand about {topic} is its context.",
    "Sure, here is an overview of {topic}.",
    "{Topic} is a common topic, and the answer has two parts.",
]
_BODY = [
    "The first point is that the details depend on the setting in which it is used.",
    "Most sources agree on the core idea, even if they describe it differently.",
    "A practical way to think about it is to start from the simplest case.",
    "In practice, people usually weigh cost, speed and reliability against each other.",
    "Historically, the approach changed as better tools became available.",
    "One common mistake is to treat every case as if it were the same.",
    "The second point concerns how {topic} behaves at a larger scale.",
    "Small changes in the inputs can have a noticeable effect on the result.",
    "It also helps to check the assumptions before drawing conclusions.",
    "Experts often recommend measuring first and optimizing afterwards.",
    "For most everyday uses, the default choice works well enough.",
    "Where precision matters, it is worth reading the primary sources.",
    "A useful example is to compare two similar cases side by side.",
    "The trade-off is usually between simplicity and flexibility.",
    "Keep in mind that conditions can change over time.",
    "Another factor is how often {topic} needs to be revisited.",
]
_CLOSINGS = [
    "I hope this helps.",
    "Let me know if you want more detail on any part.",
    "That is the essence of it.",
    "Those are the main points to keep in mind.",
]
_CJK_SENTENCES = [
    "关于{topic}，这里有一个简短的回答。",
    "首先，具体情况取决于使用的场景。",
    "大多数资料对核心观点的看法是一致的。",
    "在实践中，人们通常会权衡成本、速度和可靠性。",
    "一个常见的错误是把所有情况都当作相同的来处理。",
    "建议先进行测量，然后再做优化。",
    "希望这些信息对你有帮助。",
]
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\-]+")


@dataclass(slots=True)
class ToolSpec:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ToolCallOut:
    id_seed: str
    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(slots=True)
class Generated:
    text: str
    tokens: Tokens  # the text's tokens
    finish: str  # "stop" | "length" | "tool_calls"
    stop_sequence: str | None = None
    tool_calls: list[ToolCallOut] = field(default_factory=list)
    reasoning_text: str = ""
    reasoning_tokens: int = 0

    @property
    def output_tokens(self) -> int:
        """Billed output tokens: visible text, tool-call JSON and reasoning."""
        n = len(self.tokens) + self.reasoning_tokens
        tok = get_tokenizer()
        for call in self.tool_calls:
            n += tok.count(call.name) + tok.count(call.arguments_json)
        return n


def seed_of(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).digest()


@functools.cache
def _coprime_steps(n: int) -> tuple[int, ...]:
    return tuple(s for s in range(1, n) if math.gcd(s, n) == 1) or (1,)


class _Picker:
    """Deterministic choices from a digest: cheaper than seeding `random.Random` on every request."""

    __slots__ = ("_digest", "_i")

    def __init__(self, digest: bytes) -> None:
        self._digest = digest
        self._i = 0

    def randrange(self, n: int) -> int:
        if self._i + 2 > len(self._digest):
            self._digest = hashlib.sha256(self._digest).digest()
            self._i = 0
        v = int.from_bytes(self._digest[self._i:self._i + 2], "big")
        self._i += 2
        return v % n

    def choice(self, seq: list[str]) -> str:
        return seq[self.randrange(len(seq))]

    def order(self, n: int) -> list[int]:
        """A permutation of range(n): start + k*step with a step coprime to n."""
        steps = _coprime_steps(n)
        start, step = self.randrange(n), steps[self.randrange(len(steps))]
        return [(start + k * step) % n for k in range(n)]


def topic_of(question: str) -> str:
    if _CJK.search(question):
        cjk = "".join(_CJK.findall(question))[:8]
        return cjk or "这个问题"
    words = [w for w in _WORD.findall(question) if w.lower() not in _STOPWORDS and len(w) > 2]
    return " ".join(words[:4]) if words else "your question"


def _prose(rng: _Picker, topic: str, target_tokens: int, cjk: bool) -> str:
    return _prose_ids(rng, topic, target_tokens, cjk)[0]


def _prose_ids(rng: _Picker, topic: str, target_tokens: int, cjk: bool) -> tuple[str, Tokens | None]:
    """The prose and, for space-joined (English) prose, its token ids: o200k splits words at the joining
    space, so the ids of the text are the ids of its sentences put together (the tokenizer caches those)."""
    tok = get_tokenizer()
    if cjk:
        out = [_CJK_SENTENCES[0].format(topic=topic)]
        n = tok.count(out[0])
        for k in rng.order(len(_CJK_SENTENCES) - 1):
            s = _CJK_SENTENCES[1 + k]
            if n >= target_tokens:
                break
            out.append(s)
            n += tok.count(s)
        return "".join(out), None
    first = rng.choice(_OPENINGS).format(topic=topic, Topic=topic[:1].upper() + topic[1:])
    sentences = [first]
    # Sentences joined by spaces tokenize as the sum of " " + sentence: count per piece (cached), not the
    # growing text.
    ids = list(tok.encode(first))
    n = len(ids)
    body = [_BODY[k] for k in rng.order(len(_BODY))]
    closing = rng.choice(_CLOSINGS)
    i = 0
    while n < target_tokens and i < 3 * len(body):
        s = body[i % len(body)].format(topic=topic)
        if i == len(body) // 2:
            s = closing
        sentences.append(s)
        piece = tok.encode(" " + s)
        ids.extend(piece)
        n += len(piece)
        i += 1
    return " ".join(sentences), tuple(ids)


def arguments_for(schema: Any, rng: _Picker, topic: str, question: str) -> Any:
    """A value valid against `schema` (schema_values.py): property names that ask for a place take the
    last capitalized word of the question, other strings the topic words."""
    def text_for(name: str, _schema: dict[str, Any]) -> str:
        lowered = name.lower()
        if any(k in lowered for k in ("city", "location", "place", "country")):
            caps = [w for w in _WORD.findall(question) if w[0].isupper() and w.lower() not in _STOPWORDS]
            return caps[-1] if caps else "Paris"
        return topic

    return fill(schema if isinstance(schema, dict) else {}, text_for, rng.randrange)


def choose_tool(tools: list[ToolSpec], tool_choice: str | None, question: str,
                after_tool_result: bool, called: frozenset[str] = frozenset()) -> ToolSpec | None:
    """The tool the model calls, or None for a text answer.

    `auto`: a tool named in the question, and never right after a tool result (the model answers it).
    `required` / `any` / a named tool: always a call ("the model must call one or more tools"), after a tool
    result too; `required`/`any` then prefer a tool not called yet in the conversation (an agent's
    final-output tool after its data tools), else the first."""
    if not tools or tool_choice == "none":
        return None
    by_name = {t.name: t for t in tools}
    if tool_choice and tool_choice not in ("auto", "required", "any"):
        return by_name.get(tool_choice)
    forced = tool_choice in ("required", "any")
    if after_tool_result and not forced:
        return None
    q = question.lower()
    candidates = [t for t in tools if t.name not in called] if after_tool_result else tools
    for t in candidates:
        n = t.name.lower()
        if n in q or n.replace("_", " ") in q:
            return t
    if forced:
        return candidates[0] if candidates else tools[0]
    return None


def generate(
    *,
    model: str,
    conversation_key: str,
    question: str,
    target_tokens: int = 40,
    max_tokens: int | None = None,
    stop: list[str] | None = None,
    tools: list[ToolSpec] | None = None,
    tool_choice: str | None = None,
    tool_result: str | None = None,
    called_tools: frozenset[str] = frozenset(),
    json_schema: dict[str, Any] | None = None,
    json_object: bool = False,
    reasoning_tokens: int = 0,
    reasoning_text: bool = False,
) -> Generated:
    """The answer for one request. `conversation_key` is the canonical rendering of the whole request."""
    tok = get_tokenizer()
    rng = _Picker(seed_of(model, conversation_key))
    cjk = bool(_CJK.search(question))
    topic = topic_of(question)

    tool = choose_tool(tools or [], tool_choice, question, tool_result is not None, called_tools)
    budget = max_tokens if max_tokens is not None else 1 << 30
    reasoning = min(reasoning_tokens, budget)
    r_text = ""
    if reasoning and reasoning_text:
        thought = f"Let me think about {topic}. " + _prose(rng, topic, reasoning, cjk)
        r_text = tok.decode(tok.encode(thought)[:reasoning])
        reasoning = tok.count(r_text)
    budget -= reasoning
    if tool is not None:
        args = arguments_for(tool.parameters or {"type": "object"}, rng, topic, question)
        if not isinstance(args, dict):  # tool inputs are objects at every vendor
            args = {}
        return Generated("", (), "tool_calls", tool_calls=[ToolCallOut(conversation_key, tool.name, args)],
                         reasoning_text=r_text, reasoning_tokens=reasoning)

    prose_ids: Tokens | None = None
    # A structured-output request is answered in its schema whatever came before (constrained decoding
    # applies to every turn, the one after a tool result included).
    if json_schema is not None:
        text = json.dumps(arguments_for(json_schema, rng, topic, question), ensure_ascii=False)
    elif tool_result is not None:
        snippet = " ".join(tool_result.split())[:80]
        text = f"Based on the tool result ({snippet}), here is what I found. " + _prose(rng, topic, target_tokens, cjk)
        if json_object:
            text = json.dumps({"answer": text}, ensure_ascii=False)
    else:
        text, prose_ids = _prose_ids(rng, topic, target_tokens, cjk)
        if json_object:
            text = json.dumps({"answer": text}, ensure_ascii=False)
            prose_ids = None

    finish, matched = "stop", None
    for s in stop or []:
        idx = text.find(s) if s else -1
        if idx >= 0 and (matched is None or idx < text.find(matched)):
            matched = s
    if matched is not None:
        text = text[: text.find(matched)]
        prose_ids = None
    ids = prose_ids if prose_ids is not None else tok.encode_uncached(text)
    if len(ids) > budget:
        ids = ids[: max(budget, 0)]
        text = tok.decode(ids)
        finish, matched = "length", None
    return Generated(text, ids, finish, matched, reasoning_text=r_text, reasoning_tokens=reasoning)
