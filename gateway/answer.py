"""The protocol-neutral answer and its streaming events.

Every protocol adapter parses an upstream answer (whole or streamed) into these types and renders
them back into its own wire shape. The response and semantic caches store an `Answer`; a replay is
the same `Answer` turned into events and rendered by the client's adapter, so a cached answer reaches
the SDK exactly like a live one, stream or not.

Finish reasons use OpenAI's vocabulary (`stop`, `length`, `tool_calls`, `content_filter`); each
adapter maps its vendor's words to and from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text exactly as the model produced it


@dataclass(slots=True)
class Answer:
    """A complete answer. `usage_raw` is the vendor's own usage object, untouched."""

    text: str
    model: str
    finish_reason: str = "stop"
    tool_calls: list[ToolCall] = field(default_factory=list)
    provider: str = ""
    usage_raw: dict[str, Any] = field(default_factory=dict)
    # The model's reasoning text where the vendor returns it (Anthropic thinking, Gemini thought
    # summaries, DeepSeek's reasoning_content): OpenAI clients get it as `reasoning_content`.
    reasoning: str = ""
    # Vendor details worth replaying that have no neutral home (e.g. Anthropic's stop_sequence,
    # OpenAI's system_fingerprint). Keyed by adapter name; never holds keys or tenant data.
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "model": self.model,
            "finish_reason": self.finish_reason,
            "tool_calls": [[t.id, t.name, t.arguments] for t in self.tool_calls],
            "provider": self.provider,
            "usage_raw": self.usage_raw,
            "extra": self.extra,
            **({"reasoning": self.reasoning} if self.reasoning else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Answer:
        return cls(
            text=d["text"],
            model=d["model"],
            finish_reason=d.get("finish_reason", "stop"),
            tool_calls=[ToolCall(*t) for t in d.get("tool_calls", [])],
            provider=d.get("provider", ""),
            usage_raw=d.get("usage_raw") or {},
            reasoning=d.get("reasoning") or "",
            extra=d.get("extra") or {},
        )

    def events(self, chunk_chars: int = 0) -> Iterator[Event]:
        """The answer as a stream of events (text split in `chunk_chars` pieces when > 0)."""
        yield Start(model=self.model)
        if self.reasoning:
            yield ReasoningDelta(self.reasoning)
        if self.text:
            if chunk_chars > 0:
                for i in range(0, len(self.text), chunk_chars):
                    yield TextDelta(self.text[i : i + chunk_chars])
            else:
                yield TextDelta(self.text)
        for i, call in enumerate(self.tool_calls):
            yield ToolCallStart(index=i, id=call.id, name=call.name)
            if call.arguments:
                yield ToolCallArgs(index=i, delta=call.arguments)
        yield Finish(finish_reason=self.finish_reason, usage_raw=self.usage_raw)


# ---- streaming events -------------------------------------------------------------------------


@dataclass(slots=True)
class Start:
    model: str


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning text (rendered only by protocols that carry it)."""

    text: str


@dataclass(slots=True)
class ToolCallStart:
    index: int
    id: str
    name: str


@dataclass(slots=True)
class ToolCallArgs:
    index: int
    delta: str


@dataclass(slots=True)
class Finish:
    finish_reason: str
    usage_raw: dict[str, Any] = field(default_factory=dict)


Event = Start | TextDelta | ReasoningDelta | ToolCallStart | ToolCallArgs | Finish


class AnswerBuilder:
    """Folds events into an `Answer`; `answer()` is None until a `Finish` arrived."""

    def __init__(self, provider: str = "") -> None:
        self.provider = provider
        self.model = ""
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, ToolCall] = {}
        self._finish: Finish | None = None
        self.extra: dict[str, Any] = {}

    def add(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._text.append(event.text)
        elif isinstance(event, ToolCallArgs):
            call = self._calls.setdefault(event.index, ToolCall("", "", ""))
            call.arguments += event.delta
        elif isinstance(event, ToolCallStart):
            call = self._calls.setdefault(event.index, ToolCall("", "", ""))
            call.id, call.name = event.id or call.id, event.name or call.name
        elif isinstance(event, ReasoningDelta):
            self._reasoning.append(event.text)
        elif isinstance(event, Start):
            self.model = event.model or self.model
        elif isinstance(event, Finish):
            self._finish = event

    @property
    def finished(self) -> bool:
        return self._finish is not None

    def answer(self) -> Answer | None:
        if self._finish is None:
            return None
        return Answer(
            text="".join(self._text),
            model=self.model,
            finish_reason=self._finish.finish_reason,
            tool_calls=[self._calls[i] for i in sorted(self._calls)],
            provider=self.provider,
            usage_raw=self._finish.usage_raw,
            reasoning="".join(self._reasoning),
            extra=self.extra,
        )
