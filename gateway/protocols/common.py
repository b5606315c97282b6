"""Small helpers every adapter uses: stable JSON tags, ids, timestamps, JSON (de)serialisation."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from gateway.answer import Answer
from gateway.errors import GatewayError, vendor_error_body
from gateway.protocols.base import Turn

dumps = orjson.dumps


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def stable_json(obj: Any) -> str:
    """Deterministic compact JSON (sorted keys): how a non-text part appears in a `Turn`."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()


def without_cache_control(obj: Any) -> Any:
    """A copy of `obj` with every `cache_control` key removed (provider-cache markers never change
    the answer, so they must not change the neutral conversation either)."""
    if isinstance(obj, dict):
        return {k: without_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [without_cache_control(v) for v in obj]
    return obj


def with_prefix(prefix: str, response_id: str) -> str:
    """The vendor-style id for `response_id` (an opaque token from the gateway, e.g. the request id)."""
    return response_id if response_id.startswith(prefix) else prefix + response_id


def now() -> int:
    return int(time.time())


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def require_dict(body: Any, what: str = "request body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise GatewayError(400, f"The {what} must be a JSON object.")
    return body


def join_text(parts: list[str]) -> str:
    return "\n".join(p for p in parts if p)


def block_turns(messages: Any, blocks_text: Callable[[Any], tuple[str, bool, bool]]) -> tuple[list[Turn], bool]:
    """Turns of a messages list whose content is blocks (Anthropic, Converse), and whether any carried tool
    traffic. `blocks_text` gives (text, has tool traffic, only tool results) of one message's content; a
    message of tool results only is a `tool` turn."""
    turns: list[Turn] = []
    tool_traffic = False
    for m in messages or []:
        if not isinstance(m, dict):
            continue
        text, tools, only_results = blocks_text(m.get("content"))
        tool_traffic = tool_traffic or tools
        turns.append(Turn("tool" if only_results else str(m.get("role")), text))
    return turns, tool_traffic


class AdapterBase:
    """What the four adapters share: the vendor error shape and the default replay."""

    name: str = ""
    vendor: str = ""
    display_name: str = ""
    stream_in_body: bool = True  # `stream` is a body field (Gemini: the path's action decides)
    key_in_query: bool = False  # the SDKs may send the key as `?key=` (Gemini's documented form)
    # Body fields that frame the reply, not its content: out of every cache key (gateway/cache/key.py)
    transport_fields: frozenset[str] = frozenset({"stream", "stream_options"})
    # Body fields that carry the prompt (system, turns, tools), which the `Conversation` view holds
    prompt_fields: frozenset[str] = frozenset({"messages"})

    def unreplayable(self, body: dict[str, Any]) -> str | None:
        """Why a stored answer could not reproduce this request's reply, or None. The neutral `Answer`
        holds one choice of text and tool calls; requests for several choices, log-probabilities or a
        background job would get less from a replay than from the vendor, so they bypass the caches."""
        return None

    def model_of(self, body: dict[str, Any], path_model: str | None) -> str:
        """The model named in the body (Gemini overrides: its model is in the path)."""
        model = body.get("model")
        return model if isinstance(model, str) else ""

    def is_stream(self, body: dict[str, Any], path_stream: bool) -> bool:
        """Only a literal `true` streams, as the vendors read it (Gemini overrides: the path decides)."""
        return body.get("stream") is True

    def error_body(self, status: int, message: str, code: str | None = None) -> dict[str, Any]:
        return vendor_error_body(self.vendor, status, message, code)

    def parse_error(self, status: int, body: bytes) -> tuple[str, str | None]:
        return error_message(body, status)

    def stream_error(self, message: str, status: int = 502, code: str | None = None) -> bytes:
        """A mid-stream error event in this protocol, for a stream whose renderer is not at hand
        (prefer the renderer's `error()`, which continues its sequence numbers)."""
        renderer = self.stream_renderer({}, "error", False)  # type: ignore[attr-defined]
        return renderer.error(status, message, code)

    def replay(
        self, answer: Answer, request_body: dict[str, Any], response_id: str, include_usage: bool,
        chunk_chars: int = 0,
    ) -> Iterator[bytes]:
        renderer = self.stream_renderer(request_body, response_id, include_usage, answer)  # type: ignore[attr-defined]
        for event in answer.events(chunk_chars):
            yield renderer.render(event)
        yield renderer.close()


def error_message(body: bytes, status: int = 0) -> tuple[str, str | None]:
    """(message, code) from an error body in any vendor's shape (OpenAI, Anthropic and Gemini all
    nest it under "error"); falls back to the raw text."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body.decode("utf-8", "replace").strip()
        return (text[:2000] or f"upstream error (HTTP {status})"), None
    err = obj.get("error", obj) if isinstance(obj, dict) else obj
    if isinstance(err, list) and err:  # Gemini sometimes wraps the error in a one-element list
        err = err[0].get("error", err[0]) if isinstance(err[0], dict) else err[0]
    if isinstance(err, dict):
        message = err.get("message") or orjson.dumps(err).decode()
        code = err.get("code") if isinstance(err.get("code"), str) else None
        code = code or (err.get("type") if isinstance(err.get("type"), str) else None) or err.get("status")
        return str(message), (str(code) if code else None)
    return str(err), None


def number(value: Any, default: float) -> float:
    """A JSON number as a float; `default` for anything else (booleans included)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else default
