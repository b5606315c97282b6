"""The rendered bytes of a replayed non-stream answer, kept for the next hits on the same entry.

A response-cache hit renders the stored `Answer` in the client's protocol: a dict built by the
adapter, then JSON. Hits on one popular entry render the same thing again and again; what differs
between two of them is the request id the adapter puts in the body (`chatcmpl-<id>`, `msg_<id>`…)
and the `created` second some protocols carry. So an entry rendered twice within one second keeps
a template: the bytes split at the request id. A later hit in the same second is a join.

The template is proven, not assumed: it is built by rendering with two different stand-in ids and
kept only when both renders split into the same pieces (an adapter that adds anything else per
request, say a fresh random id, never gets one). It is valid only for the second it was built in,
the adapter, and the values of the body's transport fields (the only body fields one entry's
requests may differ in: everything else is in the cache key). It holds the answer itself, so the
answer's `id()` it is found by cannot be reused by another object while it is kept.

Entries hit less than twice a second never build one (a sighting costs a dict write). Bounded by
count and bytes; the oldest go first.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.answer import Answer
from gateway.protocols.base import ProtocolAdapter

MAX_TEMPLATES = 1024
MAX_BYTES = 4 * 1024 * 1024  # the hot answers fit; more would eat the replica's memory budget
MAX_SIGHTINGS = 4096
_SAFE_ID = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def _stand_in() -> str:
    return f"gw-{random.getrandbits(96):024x}"


@dataclass(slots=True)
class _Template:
    answer: Answer
    adapter: str
    second: int
    framing: bytes
    parts: list[bytes]
    size: int


class RenderedAnswers:
    def __init__(self, max_templates: int = MAX_TEMPLATES, max_bytes: int = MAX_BYTES) -> None:
        self.max_templates = max_templates
        self.max_bytes = max_bytes
        self._templates: dict[int, _Template] = {}
        self._bytes = 0
        self._seen: dict[int, int] = {}  # id(answer) -> the second it was last rendered in

    def render(self, adapter: ProtocolAdapter, answer: Answer, body: dict[str, Any], request_id: str) -> bytes:
        """`orjson.dumps(adapter.render_answer(answer, body, request_id))`, from a template when one fits."""
        second = int(time.time())
        framing = _framing(adapter, body)
        key = id(answer)
        found = self._templates.get(key)
        if (found is not None and found.answer is answer and found.second == second and found.adapter == adapter.name
                and found.framing == framing and _SAFE_ID.issuperset(request_id)):
            return request_id.encode().join(found.parts)
        if self._seen.get(key) != second:
            self._sight(key, second)
            return orjson.dumps(adapter.render_answer(answer, body, request_id))
        template = _build(adapter, answer, body, second, framing)
        if template is not None:
            self._keep(key, template)
        return orjson.dumps(adapter.render_answer(answer, body, request_id))

    def _sight(self, key: int, second: int) -> None:
        self._seen.pop(key, None)
        if len(self._seen) >= MAX_SIGHTINGS:
            del self._seen[next(iter(self._seen))]
        self._seen[key] = second

    def _keep(self, key: int, template: _Template) -> None:
        if template.size > self.max_bytes // 16:
            return
        old = self._templates.pop(key, None)
        if old is not None:
            self._bytes -= old.size
        while self._templates and (len(self._templates) >= self.max_templates
                                   or self._bytes + template.size > self.max_bytes):
            self._bytes -= self._templates.pop(next(iter(self._templates))).size
        self._templates[key] = template
        self._bytes += template.size


def _framing(adapter: ProtocolAdapter, body: dict[str, Any]) -> bytes:
    present = {k: body[k] for k in adapter.transport_fields if k in body}
    return orjson.dumps(present, option=orjson.OPT_SORT_KEYS) if present else b""


def _build(adapter: ProtocolAdapter, answer: Answer, body: dict[str, Any], second: int,
           framing: bytes) -> _Template | None:
    first, other = _stand_in(), _stand_in()
    parts = orjson.dumps(adapter.render_answer(answer, body, first)).split(first.encode())
    again = orjson.dumps(adapter.render_answer(answer, body, other)).split(other.encode())
    if parts != again or int(time.time()) != second:
        return None
    return _Template(answer, adapter.name, second, framing, parts, sum(len(p) for p in parts))
