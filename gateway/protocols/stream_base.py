"""The skeleton every protocol's stream parser shares.

SSE decoding, the stop rules (nothing is parsed after a finish or an error) and folding the
events into the answer are the same for every protocol; a parser sets up its own state after
`super().__init__` and turns one SSE event into neutral events in `_event`.
"""

from __future__ import annotations

from typing import Any

from gateway.answer import AnswerBuilder, Event
from gateway.protocols.sse import SSEDecoder, SSEEvent


class ParserBase:
    def __init__(self, provider: str = "") -> None:
        self._sse = SSEDecoder()
        self._builder = AnswerBuilder(provider)
        self._finished = False
        self._error: dict[str, Any] | None = None

    @property
    def error(self) -> dict[str, Any] | None:
        return self._error

    @property
    def finished(self) -> bool:
        return self._finished

    def _event(self, ev: SSEEvent, out: list[Event]) -> None:
        raise NotImplementedError  # every protocol's parser defines it

    def _stopped(self) -> bool:
        return self._finished or self._error is not None

    def feed(self, data: bytes) -> list[Event]:
        if self._stopped():
            return []
        out: list[Event] = []
        for ev in self._sse.feed(data):
            self._event(ev, out)
            if self._stopped():
                break
        return self._fold(out)

    def end(self) -> list[Event]:
        if self._stopped():
            return []
        out: list[Event] = []
        for ev in self._sse.flush():
            self._event(ev, out)
        return self._fold(out)

    def _fold(self, out: list[Event]) -> list[Event]:
        for e in out:
            self._builder.add(e)
        return out
