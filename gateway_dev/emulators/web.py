"""HTTP plumbing every emulator shares: request counting and recording, vendor error bodies, auth-key
extraction, fault handling, and one ASGI response type for JSON bodies and server-sent events that can
also cut a connection half-way (Starlette's own responses always complete)."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway_dev.emulators.clock import Clock
from gateway_dev.emulators.faults import FAULT_HEADER, Fault, FaultController
from gateway_dev.emulators.latency import LatencyModel, pause

log = logging.getLogger("gateway_dev.emulators")

LATENCY_HEADER = "x-emulator-latency"
OUTPUT_TOKENS_HEADER = "x-emulator-output-tokens"

_OPENAI_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "invalid_request_error",
                 404: "invalid_request_error", 409: "invalid_request_error", 422: "invalid_request_error",
                 429: "requests", 500: "server_error", 502: "server_error", 503: "server_error", 529: "server_error"}
_OPENAI_MESSAGES = {
    429: "Rate limit reached for requests. Please try again in 1s.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The engine is currently overloaded, please try again later.",
}
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                    403: "permission_error", 404: "not_found_error", 409: "conflict_error", 413: "request_too_large",
                    429: "rate_limit_error", 500: "api_error", 503: "api_error", 504: "timeout_error",
                    529: "overloaded_error"}
_ANTHROPIC_MESSAGES = {429: "Number of request tokens has exceeded your per-minute rate limit.",
                       500: "Internal server error", 529: "Overloaded", 503: "Service unavailable"}
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
                  504: "DEADLINE_EXCEEDED"}
_GEMINI_MESSAGES = {429: "Resource has been exhausted (e.g. check quota).", 500: "An internal error has occurred.",
                    503: "The model is overloaded. Please try again later."}


class EmulatorError(Exception):
    """A request the emulator refuses, rendered in `vendor`'s own error shape."""

    def __init__(self, vendor: str, status: int, message: str | None = None, *, type: str | None = None,
                 code: str | int | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message or "")
        self.vendor, self.status, self.type, self.code, self.param = vendor, status, type, code, param
        self.message = message or default_message(vendor, status)
        self.headers = headers or {}


def default_message(vendor: str, status: int) -> str:
    table = {"anthropic": _ANTHROPIC_MESSAGES, "gemini": _GEMINI_MESSAGES}.get(vendor, _OPENAI_MESSAGES)
    return table.get(status, f"Emulated error {status}")


def error_body(err: EmulatorError) -> dict[str, Any]:
    if err.vendor == "anthropic":
        return {"type": "error", "error": {"type": err.type or _ANTHROPIC_TYPES.get(err.status, "api_error"),
                                           "message": err.message}, "request_id": new_id("req_", 24)}
    if err.vendor == "gemini":
        return {"error": {"code": err.status, "message": err.message,
                          "status": err.type or _GEMINI_STATUS.get(err.status, "UNKNOWN")}}
    if err.vendor == "vllm":  # vLLM's OpenAI-compatible server: type is the exception class, code the status
        kind = {400: "BadRequestError", 404: "NotFoundError"}.get(err.status, "InternalServerError")
        return {"error": {"message": err.message, "type": err.type or kind, "param": err.param, "code": err.status}}
    return {"error": {"message": err.message, "type": err.type or _OPENAI_TYPES.get(err.status, "server_error"),
                      "param": err.param, "code": err.code}}


def error_response(err: EmulatorError) -> EmulatorResponse:
    headers = dict(err.headers)
    if err.vendor == "anthropic":
        headers.setdefault("request-id", new_id("req_", 24))
    return EmulatorResponse(err.status, body=orjson.dumps(error_body(err)), headers=headers)


def new_id(prefix: str, n: int = 24) -> str:
    return prefix + os.urandom((n + 1) // 2).hex()[:n]


@dataclass(slots=True)
class Recorded:
    emulator: str
    endpoint: str
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


class RequestLog:
    """How many calls each endpoint received (`counts["openai.chat"]`) and the latest requests, so the
    gateway's tests can assert "exactly one upstream call" and inspect what the gateway sent."""

    def __init__(self, keep: int = 2000) -> None:
        self.counts: Counter[str] = Counter()
        self.recent: deque[Recorded] = deque(maxlen=keep)
        self._lock = threading.Lock()

    def add(self, rec: Recorded) -> None:
        with self._lock:
            self.counts[rec.endpoint] += 1
            self.counts[rec.emulator] += 1
            self.recent.append(rec)

    def count(self, name: str) -> int:
        """Calls to an endpoint ("openai.chat") or to a whole emulator ("openai", "vllm0")."""
        return self.counts.get(name, 0)

    def requests(self, name: str | None = None) -> list[Recorded]:
        with self._lock:
            items = list(self.recent)
        return [r for r in items if name is None or r.endpoint == name or r.emulator == name]

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()
            self.recent.clear()


@dataclass
class EmulatorState:
    """What every emulator of one set shares; tests mutate it directly while the servers run."""

    clock: Clock = field(default_factory=Clock)
    latency: LatencyModel = field(default_factory=LatencyModel)
    log: RequestLog = field(default_factory=RequestLog)
    valid_keys: set[str] | None = None  # None: any non-empty key is valid
    output_tokens: int = 40  # target answer length before max_tokens / stop apply


@dataclass(slots=True)
class Call:
    request: Request
    body: Any
    api_key: str
    fault: Fault | None
    latency: LatencyModel
    target_tokens: int


async def begin(request: Request, state: EmulatorState, faults: FaultController, *, emulator: str, endpoint: str,
                vendor: str, key_of: Callable[[Request], str | None] | None, json_body: bool = True) -> Call:
    """Count and record the call, apply a status fault, check the key, parse the JSON body."""
    raw = await request.body() if json_body else b""
    body: Any = None
    parse_error = False
    if raw:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parse_error = True
    scope = request.scope
    # Straight from the ASGI scope: Starlette's URL and Headers objects cost more than the whole vLLM rule.
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    state.log.add(Recorded(emulator, endpoint, scope["method"], scope["path"], headers, body, time.time()))
    try:
        fault = faults.take(headers.get(FAULT_HEADER))
        latency = state.latency.with_overrides(headers.get(LATENCY_HEADER))
        target = int(headers.get(OUTPUT_TOKENS_HEADER) or state.output_tokens)
    except ValueError as e:
        raise EmulatorError(vendor, 400, f"emulator control header: {e}") from None
    if fault is not None and fault.status is not None:
        await _hold(request.receive, fault)
        extra = {"retry-after": f"{fault.retry_after:g}"} if fault.retry_after is not None else None
        raise EmulatorError(vendor, fault.status, fault.message, headers=extra)
    key = key_of(request) if key_of is not None else ""
    if json_body and (parse_error or (raw and not isinstance(body, dict))):
        raise EmulatorError(vendor, 400, "We could not parse the JSON body of your request.")
    if json_body and body is None and scope["method"] in ("POST", "PATCH"):
        body = {}
    return Call(request, body, key or "", fault, latency, target)


def bearer(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return None


def mask_key(key: str) -> str:
    return key[:3] + "*" * max(0, len(key) - 7) + key[-4:] if len(key) > 8 else "****"


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _hold(receive: Receive, fault: Fault | None) -> None:
    """Apply `timeout` (hold until the client leaves, or for N seconds) and `slow_first_byte`."""
    if fault is None:
        return
    if fault.timeout is not None:
        limit = None if math.isinf(fault.timeout) else fault.timeout
        try:
            await asyncio.wait_for(_wait_disconnect(receive), limit)
        except TimeoutError:
            pass
    if fault.slow_first_byte:
        await pause(fault.slow_first_byte)


class EmulatorResponse:
    """A JSON body or an async iterator of framed SSE chunks. Applies the request's fault: `timeout` and
    `slow_first_byte` before the status line, `cut_stream_after` by returning without finishing the body
    (uvicorn then drops the connection, exactly what a client sees when a vendor stream dies)."""

    def __init__(self, status: int = 200, *, body: bytes | None = None, chunks: AsyncIterator[bytes] | None = None,
                 headers: dict[str, str] | None = None, media_type: str | None = None,
                 fault: Fault | None = None) -> None:
        self.status, self.body, self.chunks, self.fault = status, body, chunks, fault
        self.media_type = media_type or ("text/event-stream; charset=utf-8" if chunks is not None
                                         else "application/json")
        self.headers = headers or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _hold(receive, self.fault)
        # Progress marks for Guard (cheaper than wrapping `send` on every chunk of the hot path).
        scope[_STARTED], scope[_STREAM] = True, self.chunks is not None
        raw_headers = [(b"content-type", self.media_type.encode())]
        raw_headers += [(k.lower().encode(), v.encode()) for k, v in self.headers.items()]
        cut = self.fault.cut_stream_after if self.fault is not None else None
        if self.chunks is None:
            body = self.body or b""
            raw_headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": self.status, "headers": raw_headers})
            if cut is not None:
                await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
                return
            await send({"type": "http.response.body", "body": body})
            scope[_DONE] = True
            return
        raw_headers.append((b"cache-control", b"no-cache"))
        await send({"type": "http.response.start", "status": self.status, "headers": raw_headers})
        sent = 0
        # A client that goes away ends the generation (a vLLM replica then frees the request's KV blocks).
        watcher = asyncio.ensure_future(_wait_disconnect(receive))
        try:
            async for chunk in self.chunks:
                if (cut is not None and sent >= cut) or watcher.done():
                    return
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                sent += 1
        finally:
            watcher.cancel()
            aclose = getattr(self.chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        await send({"type": "http.response.body", "body": b""})
        scope[_DONE] = True


_STARTED, _STREAM, _DONE = "emulator.started", "emulator.stream", "emulator.done"


class FastApp:
    """Exact (method, path) dispatch in front of a Starlette app: the hot vLLM routes skip Starlette's router
    and middleware stack (a measurable share of a zero-latency request); everything else falls through."""

    def __init__(self, routes: dict[tuple[str, str], Callable[[Request], Any]], fallback: Any,
                 errors: dict[type[Exception], Callable[[Exception], Any]]) -> None:
        self.routes, self.fallback, self.errors = routes, fallback, errors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.routes.get((scope.get("method", ""), scope.get("path", ""))) if scope["type"] == "http" \
            else None
        if handler is None:
            await self.fallback(scope, receive, send)
            return
        request = Request(scope, receive, send)
        try:
            response = await handler(request)
        except tuple(self.errors) as exc:
            response = self.errors[type(exc)](exc)
        await response(scope, receive, send)


class Guard:
    """The last resort around an emulator app: an exception no handler turned into a vendor error is logged
    and answered with a 500 in the vendor's shape (mid-stream: the vendor's in-stream error, then a clean end
    of the body). It never reaches uvicorn, which would answer a bare 500 and close the keep-alive
    connection, so that the client's *next* request on it failed with a connection reset."""

    def __init__(self, app: ASGIApp, vendor_of: Callable[[str], str]) -> None:
        self.app, self.vendor_of = app, vendor_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except Exception:
            if scope["type"] != "http":
                raise
            vendor = self.vendor_of(scope.get("path", ""))
            log.exception("emulator error on %s %s (answered as a %s 500)", scope.get("method"), scope.get("path"),
                          vendor)
            if scope.get(_DONE):
                return
            try:
                if not scope.get(_STARTED):
                    await error_response(EmulatorError(vendor, 500))(scope, receive, send)
                else:
                    tail = stream_error(vendor) if scope.get(_STREAM) else b""
                    await send({"type": "http.response.body", "body": tail, "more_body": False})
            except Exception:  # the client is gone, or a non-emulator response broke mid-way: nothing to add
                log.debug("could not answer the failed request", exc_info=True)


def stream_error(vendor: str) -> bytes:
    """The vendor's in-stream error event for a 500."""
    body = error_body(EmulatorError(vendor, 500))
    return sse_event("error", body) if vendor == "anthropic" else sse_data(body)


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None,
                  fault: Fault | None = None) -> EmulatorResponse:
    return EmulatorResponse(status, body=orjson.dumps(data), headers=headers, fault=fault)


def sse_data(obj: Any) -> bytes:
    """`data: <json>\\n\\n` (OpenAI chat, Gemini)."""
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def sse_event(name: str, obj: Any) -> bytes:
    """`event: <name>\\ndata: <json>\\n\\n` (Anthropic, OpenAI Responses)."""
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"
