"""What every protocol adapter offers the request path.

An adapter knows one wire protocol (OpenAI Chat, OpenAI Responses, Anthropic Messages, Gemini
generateContent) and nothing about caching, tenants or routing. Stages talk to protocols only
through this interface, so protocol specifics stay in `gateway/protocols/`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.answer import Answer, Event


@dataclass(slots=True)
class Turn:
    role: str  # "system" | "user" | "assistant" | "tool"
    text: str  # the turn's text content, parts joined by "\n"; non-text parts rendered as a stable JSON tag


@dataclass(slots=True)
class Conversation:
    """A protocol-neutral view of a request's prompt, used for keys, semantic matching and routing."""

    system: str  # all system/developer instructions, in order, joined by "\n"
    turns: list[Turn]  # every non-system turn, in order
    tools: list[dict[str, Any]] = field(default_factory=list)
    has_tool_traffic: bool = False  # the request carries tool calls or tool results

    @property
    def final_user_text(self) -> str | None:
        """The last turn's text when it is a user turn (the question the semantic cache compares)."""
        if self.turns and self.turns[-1].role == "user":
            return self.turns[-1].text
        return None


class StreamParser(Protocol):
    """Incremental parser of one upstream SSE stream in the adapter's protocol."""

    def feed(self, data: bytes) -> list[Event]:
        """Bytes as they arrive (any split) → the neutral events completed by them."""
        ...

    @property
    def error(self) -> dict[str, Any] | None:
        """A vendor error seen mid-stream (the stream must then not be cached)."""
        ...

    def end(self) -> list[Event]:
        """The upstream stream ended (EOF). Returns the events only the end completes: a last event
        sent without its blank line, and Gemini's `Finish` (its stream has no terminator, so it is
        complete only when it ends after a chunk with a finishReason). Call it exactly once."""
        ...

    def answer(self) -> Answer | None:
        """The complete answer folded from every event so far (with the vendor `extra` the stream
        carried), or None until a `Finish` was seen or when an error arrived."""
        ...


class StreamRenderer(Protocol):
    """Renders neutral events as the adapter's SSE wire bytes."""

    def render(self, event: Event) -> bytes: ...

    def close(self) -> bytes:
        """Trailing bytes after the last event (e.g. `data: [DONE]`)."""
        ...

    def error(self, status: int, message: str, code: str | None = None) -> bytes:
        """A mid-stream error event in this protocol (after it, send nothing more, not even
        `close()`): how a client learns that a translated upstream stream failed half-way."""
        ...


class ProtocolAdapter(Protocol):
    name: str  # "openai_chat" | "openai_responses" | "anthropic_messages" | "gemini"
    vendor: str  # the error/auth dialect: "openai" | "anthropic" | "gemini"
    display_name: str  # for messages: "OpenAI" | "Anthropic" | "Gemini"
    stream_in_body: bool  # `stream` is a body field (Gemini: the path's action decides)
    key_in_query: bool  # the SDKs may send the key as `?key=` (Gemini's documented form)
    transport_fields: frozenset[str]  # body fields that frame the reply: out of every cache key
    prompt_fields: frozenset[str]  # body fields that carry the prompt (the `Conversation` holds them)

    def unreplayable(self, body: dict[str, Any]) -> str | None:
        """Why a stored answer could not reproduce this request's reply (None: it can)."""
        ...

    def model_of(self, body: dict[str, Any], path_model: str | None) -> str: ...

    def is_stream(self, body: dict[str, Any], path_stream: bool) -> bool: ...

    def conversation(self, body: dict[str, Any]) -> Conversation: ...

    def parse_answer(self, body: dict[str, Any], provider: str) -> Answer: ...

    def stream_parser(self, provider: str) -> StreamParser: ...

    def render_answer(self, answer: Answer, request_body: dict[str, Any], response_id: str) -> dict[str, Any]: ...

    def stream_renderer(
        self, request_body: dict[str, Any], response_id: str, include_usage: bool
    ) -> StreamRenderer: ...

    def error_body(self, status: int, message: str, code: str | None = None) -> dict[str, Any]: ...

    def stream_error(self, message: str, status: int = 502, code: str | None = None) -> bytes:
        """A mid-stream error event in this protocol when no renderer is at hand (a renderer's own
        `error()` is preferred: it continues the Responses sequence numbers)."""
        ...

    def parse_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        """An upstream error body in this protocol → (message, code), to re-render it in the
        client's dialect with the client adapter's `error_body` when the two differ."""
        ...

    def replay(
        self, answer: Answer, request_body: dict[str, Any], response_id: str, include_usage: bool,
        chunk_chars: int = 0,
    ) -> Iterator[bytes]:
        """A complete answer (a cache hit) as this protocol's SSE bytes, parsed by the SDK like a
        live stream. Prefer it to `stream_renderer` for replays: knowing the whole answer up front
        it can also replay what events do not carry (Anthropic's prompt usage in message_start,
        refusals, thought signatures)."""
        ...

    def upstream_stream_body(self, body: dict[str, Any]) -> tuple[dict[str, Any], SSEFilter | None]:
        """For a stream relayed in this protocol: the body to send upstream (e.g. OpenAI Chat asks
        for `stream_options.include_usage` so the gateway can meter the stream) and a filter that
        restores what the client would have seen (drops the usage chunk it did not ask for), or
        None when the bytes pass through untouched."""
        ...


class SSEFilter(Protocol):
    def __call__(self, event: bytes) -> bytes | None:
        """One complete SSE event (its lines, without the blank-line separator) → the bytes to
        relay instead, or None to drop it."""
        ...
